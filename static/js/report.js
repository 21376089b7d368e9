// Live progress of a running analysis: poll GET /api/analyses/<id>/ and reload when it finishes.
(function () {
  "use strict";
  const box = document.getElementById("run-status");
  const url = box && box.dataset.pollUrl;
  if (!url) return;
  const bar = document.getElementById("run-progress");
  const stage = document.getElementById("run-stage");
  const shards = document.getElementById("run-shards");
  // RunStatus's labels, as the page first shows them (the API gives the values).
  const STATUS = { queued: "Queued", running: "Running", succeeded: "Succeeded", failed: "Failed" };

  // "· shards 3 of 8 done": shown only while a run split into shards is running (as the template decides).
  function showShards(run) {
    shards.hidden = !(run.status === "running" && run.shards_total > 1);
    shards.querySelectorAll(".shards-done").forEach((el) => { el.textContent = run.shards_done; });
    shards.querySelectorAll(".shards-total").forEach((el) => { el.textContent = run.shards_total; });
    shards.querySelectorAll(".shards-reused").forEach((el) => { el.textContent = run.shards_reused; });
    document.getElementById("run-shards-reused").hidden = !run.shards_reused;
  }

  async function poll() {
    let run;
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) return setTimeout(poll, 5000);
      run = await response.json();
    } catch (err) {
      return setTimeout(poll, 5000);  // the server restarts: try again, quietly
    }
    bar.value = run.progress;
    bar.textContent = run.progress + "%";
    stage.textContent = (STATUS[run.status] || run.status) + (run.stage ? " · " + run.stage : "");
    showShards(run);
    if (run.status === "succeeded" || run.status === "failed") {
      window.location.reload();
    } else {
      setTimeout(poll, 1000);
    }
  }
  setTimeout(poll, 1000);
})();

// After an upload of TREC runs: the problems, or the result, take the focus (so they are read out first).
(function () {
  "use strict";
  const target = document.getElementById("runs-errors") || document.getElementById("runs-result");
  if (target) target.focus();
})();
