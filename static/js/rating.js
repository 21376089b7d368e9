/* What the rating pages share (broad_fine, numeric, categorical, pairwise): one card per unit, the
 * active card takes the keys; values are shown at once, recorded as events and saved through the
 * outbox; each card says what the server stored. Each scheme's module (schemes/*.js) says how its
 * values are chosen, typed and shown. */
import { Page } from "./page.js";

const DIGIT_PAUSE = 700;
// Events that set a value, and the judgment field each sets.
export const VALUE_TYPES = { broad_set: "broad", fine_set: "fine", score_set: "score", label_set: "label", pairwise_set: "verdict" };

export class RatingPage extends Page {
  /* What a scheme's page says: the event its choice buttons record (null: it has none). */
  get choiceEvent() {
    return null;
  }

  constructor() {
    super();
    this.cards = Array.from(document.querySelectorAll(".card[data-unit]"));
    this.digits = "";
    this.digitTimer = null;
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

  /* Whether a stored judgment has every value the scheme asks for. */
  isComplete() {
    return false;
  }

  /* What a stored judgment that is neither complete nor empty says (null: the scheme has no such state). */
  partialText() {
    return null;
  }

  showStored(card, j) {
    let state = "unrated";
    let text = "Not rated yet";
    const partial = this.partialText(j);
    if (j.skipped) [state, text] = ["skipped", "Skipped"];
    else if (this.isComplete(j)) [state, text] = ["saved", "Saved"];
    else if (partial) [state, text] = ["partial", partial];
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
    this.wireValues(card);
    const skip = card.querySelector(".skip");
    if (skip) skip.addEventListener("click", () => this.skip(card));
    const undo = card.querySelector(".undo-skip");
    if (undo) undo.addEventListener("click", () => this.undoSkip(card));
    const send = card.querySelector(".send-comment");
    if (send) send.addEventListener("click", () => this.comment(card));
  }

  /* The scheme's own fields on a card (a number field, ...). */
  wireValues() {}

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
    this.showChoice(card, value);
    this.record(this.choiceEvent, this.unitOf(card), { value });
    this.chosen(card, value);
  }

  /* After a choice is recorded: what else the scheme does. */
  chosen() {}

  showChoice(card, value) {
    for (const b of card.querySelectorAll(".choice")) b.setAttribute("aria-checked", String(b.dataset.value === value));
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
      this.restoreValue(card, e.type, e.payload.value);
      this.setIndicator(e, "saving", "Saving…");
    }
    for (const card of this.cards) this.restored(card);
  }

  /* Show a value waiting in the outbox: a choice here; number fields in number_scale.js. */
  restoreValue(card, type, value) {
    this.showChoice(card, value);
  }

  /* Once every waiting value is shown: what else the scheme shows (the FINE hint). */
  restored() {}

  /* --- keys ------------------------------------------------------------------------------- */
  /* The whole numbers a digit key can reach (see typeDigit): the positions of the choices here. */
  digitScale(card) {
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

  /* The keys of the scheme's values; true when the key was handled. */
  schemeKey() {
    return false;
  }

  /* A digit key: the choice at that position (1 is the first). */
  choiceKey(card, e) {
    const choices = Array.from(card.querySelectorAll(".choice"));
    if (/^[1-9]$/.test(e.key) && choices[Number(e.key) - 1]) {
      this.choose(card, choices[Number(e.key) - 1].dataset.value);
      return true;
    }
    return false;
  }
}
