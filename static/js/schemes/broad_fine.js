/* The BROAD/FINE page: a BROAD category (Not Similar / Somewhat Similar / Very Similar) by click or
 * the keys 1–3, and a FINE score from 0 to 10 in tenths (the number field, `f` to reach it, the
 * arrow keys to nudge it). A FINE outside the band most graders give its BROAD gets a gentle note. */
import { NumberScale } from "../number_scale.js";
import { startPage } from "../page.js";
import { RatingPage } from "../rating.js";

const NAMES = { NS: "Not Similar", SS: "Somewhat Similar", VS: "Very Similar" };

class BroadFinePage extends NumberScale(RatingPage) {
  get choiceEvent() {
    return "broad_set";
  }

  get numberEvent() {
    return "fine_set";
  }

  get numberField() {
    return "fine";
  }

  get rangeSelector() {
    return ".fine-range";
  }

  get numberSelector() {
    return ".fine-number";
  }

  numberParams() {
    return { min: 0, max: 10, step: 0.1 };
  }

  /* The note last recorded for each card, so that one note is recorded once. */
  get hintShown() {
    if (!this._hintShown) this._hintShown = new Map();
    return this._hintShown;
  }

  isComplete(j) {
    return j.broad && j.fine !== null;
  }

  partialText(j) {
    return j.broad || j.fine !== null ? `Partly rated: ${j.broad ? "FINE" : "BROAD"} missing` : null;
  }

  chosen(card, value) {
    card.dataset.broad = value;
    this.checkHint(card);
  }

  numberSet(card) {
    this.checkHint(card);
  }

  restoreValue(card, type, value) {
    super.restoreValue(card, type, value);
    if (type === "broad_set") card.dataset.broad = value;
  }

  /* After a reload the note is shown again, not recorded again. */
  restored(card) {
    this.hintShown.set(card, `${card.dataset.broad}:${card.dataset.fine === "" ? null : Number(card.dataset.fine)}`);
    this.checkHint(card);
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
    hint.textContent = `FINE ${fine.toFixed(1)} is unusual for ${NAMES[broad]}: most graders give ${band[0]}–${band[1]}. Keep it if you mean it.`;
    hint.hidden = false;
    const key = `${broad}:${fine}`;
    if (this.hintShown.get(card) !== key) {
      this.hintShown.set(card, key);
      this.record("hint_shown", this.unitOf(card), { broad, fine, band });
    }
  }

  schemeKey(card, e) {
    if (e.key === "f") {
      card.querySelector(".fine-number").focus();
      return true;
    }
    return this.nudgeKey(card, e, 10) || this.choiceKey(card, e);
  }
}

startPage(BroadFinePage);
