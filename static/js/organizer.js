// Organizer pages: copy a one-time link to the clipboard; say beside a file field, before anything is
// sent, that a chosen file is larger than the server takes (the server checks again).
(function () {
  "use strict";
  document.querySelectorAll("button.copy-link").forEach(function (button) {
    button.addEventListener("click", async function () {
      const input = button.previousElementSibling.querySelector("input") || button.previousElementSibling;
      input.select();
      try {
        await navigator.clipboard.writeText(input.value);
        button.textContent = "Copied";
      } catch (err) {
        document.execCommand("copy");  // older browsers, or a page not served over HTTPS
        button.textContent = "Copied";
      }
    });
  });
  // A file chosen before this script ran (a slow connection) is checked as well as every later choice.
  function checkSize(input) {
    const most = Number(input.dataset.maxBytes);
    const file = input.files && input.files[0];
    const id = input.id + "-size-error";
    let note = document.getElementById(id);
    if (file && file.size > most) {
      const text = file.name + " is " + (file.size / 1048576).toFixed(1) + " MB; this file may be at most " +
        input.dataset.maxText + ". Choose a smaller file.";
      if (!note) {
        note = document.createElement("p");
        note.className = "field-error";
        note.id = id;
        note.setAttribute("role", "alert");
        input.insertAdjacentElement("afterend", note);
      }
      note.textContent = text;
      input.setCustomValidity(text);
      input.setAttribute("aria-invalid", "true");
      input.setAttribute("aria-describedby", id);
    } else {
      if (note) note.remove();
      input.setCustomValidity("");
      input.removeAttribute("aria-invalid");
      input.removeAttribute("aria-describedby");
    }
  }
  document.querySelectorAll("input[type=file][data-max-bytes]").forEach(function (input) {
    input.addEventListener("change", function () { checkSize(input); });
    checkSize(input);
  });
  const errors = document.getElementById("form-errors");
  if (errors) errors.focus();
})();
