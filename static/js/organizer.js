// Organizer pages: copy a one-time link to the clipboard.
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
  const errors = document.getElementById("form-errors");
  if (errors) errors.focus();
})();
