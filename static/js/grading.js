/* Rating pages: broad_fine, numeric, categorical and pairwise. One card per unit; the active card
 * takes the keys. Values are shown at once, recorded as events, and saved through the outbox. */
(function () {
  "use strict";

  const E = window.Evalutron;
  const FINE_DEBOUNCE = 600;
  const DIGIT_PAUSE = 700;
  const VALUE_TYPES = { broad_set: "broad", fine_set: "fine", score_set: "score", label_set: "label", pairwise_set: "verdict" };

  function decimals(step) {
    const s = String(step);
    return s.includes(".") ? s.split(".")[1].length : 0;
  }

  class RatingPage extends E.Page {
    constructor() {
      super();
      this.cards = Array.from(document.querySelectorAll(".card[data-unit]"));
      this.digits = "";
      this.digitTimer = null;
      this.fineTimers = new Map();
      this.hintShown = new Map();
      this.active = null;
      this.counts = this.config.counts;
      this.doneAtLoad = this.tally();
      for (const card of this.cards) this.wireCard(card);
      const nextUnrated = document.getElementById("next-unrated");
      if (nextUnrated) nextUnrated.addEventListener("click", () => this.nextUnrated());
      this.restorePending();
      this.listenKeys((e) => this.onKey(e));
      // The first unit still open has the keyboard; below the fold (work added to a page, a page
      // left half done), it is brought into view so that what the keys act on is what one sees.
      const first = this.cards.find((c) => c.dataset.status === "open") || this.cards[0];
      if (first) this.activate(first, { scroll: first !== this.cards[0], focus: true });
    }

    unitOf(card) {
      return { unit: Number(card.dataset.unit) };
    }

    cardOf(unit) {
      return this.cards.find((c) => Number(c.dataset.unit) === unit);
    }

    indicatorFor(target) {
      const card = target && target.unit ? this.cardOf(target.unit) : null;
      if (!card) return null;
      return card.querySelector(target.type === "comment" ? ".comment-state" : ".saved");
    }

    activeTarget() {
      return this.active ? this.unitOf(this.active) : null;
    }

    /* --- truthful states: what the server stored, and the counters -------------------------- */
    onStored(event, result) {
      const card = this.cardOf(event.unit);
      if (!card) return;
      if (event.type === "comment") {
        this.setIndicator(event, "saved", "Comment saved: edit it and save again to change it.");
        return;
      }
      if (result.judgment) this.showStored(card, result.judgment);
    }

    showStored(card, j) {
      const complete = { broad_fine: j.broad && j.fine !== null, numeric: j.score !== null, categorical: j.label,
        pairwise: j.verdict }[this.config.scheme];
      let state = "unrated";
      let text = "Not rated yet";
      if (j.skipped) [state, text] = ["skipped", "Skipped"];
      else if (complete) [state, text] = ["saved", "Saved"];
      else if (j.broad || j.fine !== null) [state, text] = ["partial", `Partly rated: ${j.broad ? "FINE" : "BROAD"} missing`];
      const indicator = card.querySelector(".saved");
      indicator.dataset.state = state;
      indicator.textContent = text;
      card.dataset.status = { saved: "done", skipped: "skipped" }[state] || "open";
      const skipped = Boolean(j.skipped);
      card.querySelector(".skip-box").hidden = skipped;
      card.querySelector(".undo-box").hidden = !skipped;
      this.showCounts();
    }

    tally() {
      const by = (s) => this.cards.filter((c) => c.dataset.status === s).length;
      return { done: by("done"), skipped: by("skipped"), open: by("open") };
    }

    showCounts() {
      const now = this.tally();
      const c = this.counts;
      const allDone = c.all_done + now.done - this.doneAtLoad.done;
      const allSkipped = c.all_skipped + now.skipped - this.doneAtLoad.skipped;
      document.getElementById("count-here").textContent = `${now.done} of ${c.here} here`;
      document.getElementById("count-all").textContent = `${allDone} of ${c.all} in all`;
      const skipped = document.getElementById("count-skipped");
      skipped.hidden = allSkipped <= 0;
      skipped.querySelector(".n").textContent = String(allSkipped);
      document.getElementById("progress-all").value = allDone;
      document.getElementById("page-complete").hidden = now.open > 0;
    }

    /* The next unit without a value: on this page after the active one, then on a later page. */
    nextUnrated() {
      const start = Math.max(0, this.cards.indexOf(this.active));
      const order = this.cards.slice(start + 1).concat(this.cards.slice(0, start + 1));
      const next = order.find((c) => c.dataset.status === "open" && c !== this.active);
      if (next) {
        this.activate(next, { scroll: true, focus: true });
      } else if (this.config.nextUnratedUrl) {
        window.location.href = this.config.nextUnratedUrl;
      } else if (this.active && this.active.dataset.status !== "open") {
        this.status.textContent = "Every unit assigned to you has a value or is skipped.";
      }
    }

    /* --- cards ------------------------------------------------------------------------------ */
    wireCard(card) {
      card.addEventListener("focusin", () => this.activate(card, { scroll: false, focus: false }));
      card.addEventListener("pointerdown", () => this.activate(card, { scroll: false, focus: false }));
      for (const button of card.querySelectorAll(".choice")) {
        button.addEventListener("click", () => this.choose(card, button.dataset.value));
      }
      const scheme = this.config.scheme;
      if (scheme === "broad_fine") this.wireNumber(card, ".fine-range", ".fine-number", { min: 0, max: 10, step: 0.1 });
      if (scheme === "numeric") this.wireNumber(card, ".score-range", ".score-number", this.config.params);
      const skip = card.querySelector(".skip");
      if (skip) skip.addEventListener("click", () => this.skip(card));
      const undo = card.querySelector(".undo-skip");
      if (undo) undo.addEventListener("click", () => this.undoSkip(card));
      const send = card.querySelector(".send-comment");
      if (send) send.addEventListener("click", () => this.comment(card));
    }

    activate(card, { scroll, focus }) {
      if (this.active !== card) {
        if (this.active) this.active.classList.remove("active");
        card.classList.add("active");
        this.active = card;
        // Time on unit runs from here to the next interaction: viewing is recorded, never shown.
        this.record("unit_viewed", this.unitOf(card), {});
      }
      if (focus && !card.contains(document.activeElement)) card.focus({ preventScroll: !scroll });
      if (scroll) card.scrollIntoView({ block: "nearest", behavior: "smooth" });
    }

    move(delta) {
      const i = this.cards.indexOf(this.active);
      const next = this.cards[Math.min(this.cards.length - 1, Math.max(0, i + delta))];
      if (next) this.activate(next, { scroll: true, focus: true });
    }

    /* --- values ----------------------------------------------------------------------------- */
    choose(card, value) {
      if (this.config.readonly) return;
      const type = { broad_fine: "broad_set", categorical: "label_set", pairwise: "pairwise_set" }[this.config.scheme];
      this.showChoice(card, value);
      this.record(type, this.unitOf(card), { value });
      if (this.config.scheme === "broad_fine") {
        card.dataset.broad = value;
        this.checkHint(card);
      }
    }

    showChoice(card, value) {
      for (const b of card.querySelectorAll(".choice")) b.setAttribute("aria-checked", String(b.dataset.value === value));
    }

    wireNumber(card, rangeSel, numberSel, params) {
      const range = card.querySelector(rangeSel);
      const number = card.querySelector(numberSel);
      if (!range || !number) return;
      range.addEventListener("input", () => this.showNumber(card, Number(range.value), false));
      range.addEventListener("change", () => this.commitNumber(card, Number(range.value)));
      // Touching an unset track exactly where its hidden value sits changes nothing, so no change
      // event: the touch itself is the answer.
      range.addEventListener("pointerup", () => {
        if (range.dataset.unset !== undefined) this.commitNumber(card, Number(range.value));
      });
      number.addEventListener("change", () => {
        const value = Number(number.value.replace(",", "."));
        const error = card.querySelector(".field-error");
        const steps = (value - params.min) / params.step;
        const ok = number.value.trim() !== "" && Number.isFinite(value) && value >= params.min && value <= params.max &&
          Math.abs(steps - Math.round(steps)) < 1e-6;
        if (error) {
          error.hidden = ok;
          error.textContent = ok ? "" : `Use a number from ${params.min} to ${params.max} in steps of ${params.step}.`;
        }
        if (ok) this.commitNumber(card, value);
      });
    }

    numberParams() {
      return this.config.scheme === "broad_fine" ? { min: 0, max: 10, step: 0.1 } : this.config.params;
    }

    showNumber(card, value, unsetOk) {
      const p = this.numberParams();
      const fixed = Number(value).toFixed(decimals(p.step));
      const range = card.querySelector(".fine-range, .score-range");
      const number = card.querySelector(".fine-number, .score-number");
      if (range) {
        range.value = fixed;
        if (!unsetOk) delete range.dataset.unset;
      }
      if (number) number.value = fixed;
      return Number(fixed);
    }

    commitNumber(card, value) {
      if (this.config.readonly) return;
      const shown = this.showNumber(card, value, false);
      clearTimeout(this.fineTimers.get(card));
      this.fineTimers.delete(card);
      const error = card.querySelector(".field-error");
      if (error) error.hidden = true;
      if (this.config.scheme === "broad_fine") {
        card.dataset.fine = String(shown);
        this.record("fine_set", this.unitOf(card), { value: shown });
        this.checkHint(card);
      } else {
        card.dataset.score = String(shown);
        this.record("score_set", this.unitOf(card), { value: shown });
      }
    }

    /* Arrow keys: the value moves at once, the event is recorded when the keys rest. */
    nudge(card, steps) {
      const p = this.numberParams();
      const range = card.querySelector(".fine-range, .score-range");
      const current = range && range.dataset.unset === undefined ? Number(range.value) : (p.min + p.max) / 2;
      const raw = Math.min(p.max, Math.max(p.min, current + steps * p.step));
      const value = this.showNumber(card, p.min + Math.round((raw - p.min) / p.step) * p.step, false);
      clearTimeout(this.fineTimers.get(card));
      this.fineTimers.set(card, setTimeout(() => this.commitNumber(card, value), FINE_DEBOUNCE));
    }

    /* BROAD and FINE should tell the same story; a FINE outside the band gets a gentle note. */
    checkHint(card) {
      const hint = card.querySelector(".hint");
      const broad = card.dataset.broad;
      const fine = card.dataset.fine === "" || card.dataset.fine === undefined ? null : Number(card.dataset.fine);
      const band = broad && this.config.params.fine_bands ? this.config.params.fine_bands[broad] : null;
      const outside = band && fine !== null && (fine < band[0] || fine > band[1]);
      if (!hint) return;
      if (!outside) {
        hint.hidden = true;
        this.hintShown.delete(card);
        return;
      }
      const names = { NS: "Not Similar", SS: "Somewhat Similar", VS: "Very Similar" };
      hint.textContent = `FINE ${fine.toFixed(1)} is unusual for ${names[broad]}: most graders give ${band[0]}–${band[1]}. Keep it if you mean it.`;
      hint.hidden = false;
      const key = `${broad}:${fine}`;
      if (this.hintShown.get(card) !== key) {
        this.hintShown.set(card, key);
        this.record("hint_shown", this.unitOf(card), { broad, fine, band });
      }
    }

    skip(card) {
      if (this.config.readonly) return;
      const reason = card.querySelector(".skip-reason");
      this.record("skip", this.unitOf(card), { reason: reason ? reason.value.trim() : "" });
      this.nextUnrated();
    }

    undoSkip(card) {
      if (this.config.readonly) return;
      this.record("skip_undone", this.unitOf(card), {});
      this.activate(card, { scroll: false, focus: true });
    }

    comment(card) {
      const box = card.querySelector(".comment");
      const text = box.value.trim();
      const state = card.querySelector(".comment-state");
      if (this.config.readonly) return;
      if (!text) {
        state.dataset.state = "error";
        state.textContent = "Write a comment first.";
        return;
      }
      this.record("comment", this.unitOf(card), { text });
    }

    /* After a reload, values still waiting in the outbox are shown over the server's. */
    restorePending() {
      const waiting = this.outbox.pending().filter((e) => e.campaign === this.config.campaign && VALUE_TYPES[e.type]);
      waiting.sort((a, b) => (a.client_ts < b.client_ts ? -1 : a.client_ts > b.client_ts ? 1 : a.seq - b.seq));
      for (const e of waiting) {
        const card = this.cardOf(e.unit);
        if (!card) continue;
        const value = e.payload.value;
        if (e.type === "fine_set" || e.type === "score_set") {
          this.showNumber(card, value, false);
          card.dataset[VALUE_TYPES[e.type]] = String(value);
        } else {
          this.showChoice(card, value);
          if (e.type === "broad_set") card.dataset.broad = value;
        }
        this.setIndicator(e, "saving", "Saving…");
      }
      for (const card of this.cards) this.checkHintQuietly(card);
    }

    checkHintQuietly(card) {
      if (this.config.scheme !== "broad_fine") return;
      this.hintShown.set(card, `${card.dataset.broad}:${card.dataset.fine === "" ? null : Number(card.dataset.fine)}`);
      this.checkHint(card);
    }

    /* --- keys ------------------------------------------------------------------------------- */
    /* The whole numbers a digit key can reach: a numeric scale, or the positions of the choices. */
    digitScale(card) {
      if (this.config.scheme === "numeric") {
        return { ...this.config.params, show: (v) => this.showNumber(card, v, false), set: (v) => this.commitNumber(card, v) };
      }
      const choices = Array.from(card.querySelectorAll(".choice"));
      return { min: 1, max: choices.length, step: 1, show: () => {}, set: (v) => this.choose(card, choices[v - 1].dataset.value) };
    }

    /* Digits typed in a row make one number, so every value is reachable (10 on 0–10 is 1 then 0;
     * the 12th label is 1 then 2). A number that more digits could still extend waits a moment. */
    typeDigit(card, digit) {
      clearTimeout(this.digitTimer);
      const scale = this.digitScale(card);
      const onScale = (v) => {
        const steps = (v - scale.min) / scale.step;
        return v >= scale.min && v <= scale.max && Math.abs(steps - Math.round(steps)) < 1e-6;
      };
      const extendable = (t) => t[0] !== "0" && Number(`${t}0`) <= scale.max;
      let typed = this.digits + digit;
      if (!onScale(Number(typed)) && !extendable(typed)) typed = digit;
      const value = Number(typed);
      if (onScale(value) && !extendable(typed)) {
        this.digits = "";
        scale.set(value);
        return;
      }
      this.digits = typed;
      if (onScale(value)) scale.show(value);
      this.digitTimer = setTimeout(() => {
        this.digits = "";
        if (onScale(value)) scale.set(value);
      }, DIGIT_PAUSE);
    }

    onKey(e) {
      const card = this.active;
      if (e.key === "__focus_active__") {
        if (card) card.focus();
        return true;
      }
      if (e.key === "j" || e.key === "ArrowDown") {
        this.move(1);
        return true;
      }
      if (e.key === "k" || e.key === "ArrowUp") {
        this.move(-1);
        return true;
      }
      if (e.key === "u") {
        this.nextUnrated();
        return true;
      }
      if (!card) return false;
      if (e.key === "f" && this.config.scheme === "broad_fine") {
        card.querySelector(".fine-number").focus();
        return true;
      }
      if (e.key === " ") {
        this.togglePlayer(card.querySelector(".player"));
        return true;
      }
      if (e.key === "Enter" && e.target === card) {
        this.move(1);
        return true;
      }
      return this.schemeKey(card, e);
    }

    schemeKey(card, e) {
      const scheme = this.config.scheme;
      const choices = Array.from(card.querySelectorAll(".choice"));
      if (scheme === "broad_fine" || scheme === "numeric") {
        if (e.key === "ArrowLeft" || e.key === "ArrowRight") {
          const sign = e.key === "ArrowLeft" ? -1 : 1;
          this.nudge(card, sign * (e.shiftKey ? (scheme === "numeric" ? 5 : 10) : 1));
          return true;
        }
      }
      if ((scheme === "numeric" || scheme === "categorical") && /^[0-9]$/.test(e.key)) {
        this.typeDigit(card, e.key);
        return true;
      }
      if (scheme === "numeric" && (e.key === "Home" || e.key === "End")) {
        this.commitNumber(card, e.key === "Home" ? this.config.params.min : this.config.params.max);
        return true;
      }
      if (scheme === "pairwise") {
        const map = { a: "A", 1: "A", e: "equal", "=": "equal", 2: "equal", b: "B", 3: "B" };
        if (map[e.key]) {
          this.choose(card, map[e.key]);
          return true;
        }
      }
      if (/^[1-9]$/.test(e.key) && choices[Number(e.key) - 1] && scheme !== "pairwise") {
        this.choose(card, choices[Number(e.key) - 1].dataset.value);
        return true;
      }
      return false;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const page = new RatingPage();
    page.start();
    window.evalutronPage = page;
  });
})();
