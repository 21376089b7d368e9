// The organizer's progress dashboard: render the data embedded in the page, then poll the JSON
// endpoint and redraw, so the numbers move without a reload.
(function () {
  "use strict";
  const box = document.getElementById("dashboard");
  if (!box) return;
  const POLL_MS = 4000;

  function cell(row, text, numeric) {
    const td = document.createElement("td");
    td.textContent = text === null || text === undefined ? "—" : String(text);
    if (numeric) td.className = "num";
    row.appendChild(td);
  }

  function fill(tableId, rows, columns) {
    const body = document.querySelector("#" + tableId + " tbody");
    const fresh = document.createElement("tbody");
    rows.forEach(function (item) {
      const tr = document.createElement("tr");
      columns.forEach(function (c) { cell(tr, c[1](item), c[0]); });
      fresh.appendChild(tr);
    });
    if (!rows.length) {
      const tr = document.createElement("tr");
      cell(tr, "Nothing here.");
      tr.firstChild.colSpan = columns.length;
      fresh.appendChild(tr);
    }
    body.replaceWith(fresh);
  }

  function ago(iso) {
    if (!iso) return "never";
    const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (s < 90) return Math.round(s) + " s ago";
    if (s < 5400) return Math.round(s / 60) + " min ago";
    if (s < 129600) return Math.round(s / 3600) + " h ago";
    return Math.round(s / 86400) + " days ago";
  }

  function duration(s) {
    if (s === null || s === undefined) return "—";
    if (s < 90) return Math.round(s) + " s";
    if (s < 5400) return Math.round(s / 60) + " min";
    if (s < 172800) return (s / 3600).toFixed(1) + " h";
    return (s / 86400).toFixed(1) + " days";
  }

  function render(data) {
    const t = data.totals;
    const bar = document.getElementById("bar");
    bar.max = Math.max(1, t.assigned);
    bar.value = t.done + t.skipped;
    bar.textContent = Math.round(100 * bar.value / bar.max) + "%";
    ["done", "skipped", "open", "assigned"].forEach(function (k) {
      document.querySelector('#totals [data-k="' + k + '"]').textContent = t[k];
    });
    const est = data.estimate;
    document.getElementById("estimate").textContent = est.seconds === null
      ? "Time left: unknown (" + est.basis + ")."
      : est.seconds === 0 ? "Nothing left open."
      : "Time left at this pace: about " + duration(est.seconds) + " (" + est.basis + ").";
    fill("graders", data.graders, [
      [false, function (g) { return g.user; }], [false, function (g) { return g.pseudonym; }],
      [true, function (g) { return g.assigned; }], [true, function (g) { return g.done; }],
      [true, function (g) { return g.skipped; }], [true, function (g) { return g.open; }],
      [false, function (g) { return ago(g.last_active); }], [true, function (g) { return duration(g.median_seconds); }],
    ]);
    fill("queries", data.queries, [
      [false, function (q) { return q.query; }], [true, function (q) { return q.units; }],
      [true, function (q) { return q.covered; }],
    ]);
    fill("waiting", data.waiting, [
      [false, function (u) { return u.unit; }], [true, function (u) { return u.done; }], [true, function (u) { return u.needed; }],
    ]);
    document.getElementById("n-waiting").textContent = data.n_waiting;
    document.getElementById("waiting-more").textContent =
      data.n_waiting > data.waiting.length ? "The first " + data.waiting.length + " are listed." : "";
    document.getElementById("updated").textContent = "updated " + new Date(data.generated_at).toLocaleTimeString();
  }

  async function poll() {
    try {
      const response = await fetch(box.dataset.url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (response.ok) render(await response.json());
    } catch (err) {
      // The server restarts or the network blinks: keep the last numbers and try again.
    }
    setTimeout(poll, document.hidden ? POLL_MS * 4 : POLL_MS);
  }

  render(JSON.parse(document.getElementById("dashboard-data").textContent));
  setTimeout(poll, POLL_MS);
})();
