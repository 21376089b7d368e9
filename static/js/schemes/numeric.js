/* The numeric page: a score on the campaign's scale (min, max, step) by the slider, the number field,
 * digits typed in a row, the arrow keys (Shift: five steps), Home and End. */
import { NumberScale } from "../number_scale.js";
import { startPage } from "../page.js";
import { RatingPage } from "../rating.js";

class NumericPage extends NumberScale(RatingPage) {
  get numberEvent() {
    return "score_set";
  }

  get numberField() {
    return "score";
  }

  get rangeSelector() {
    return ".score-range";
  }

  get numberSelector() {
    return ".score-number";
  }

  numberParams() {
    return this.config.params;
  }

  isComplete(j) {
    return j.score !== null;
  }

  /* Digits reach the scale's values. */
  digitScale(card) {
    return { ...this.config.params, show: (v) => this.showNumber(card, v, false), set: (v) => this.commitNumber(card, v) };
  }

  schemeKey(card, e) {
    if (this.nudgeKey(card, e, 5)) return true;
    if (/^[0-9]$/.test(e.key)) {
      this.typeDigit(card, e.key);
      return true;
    }
    if (e.key === "Home" || e.key === "End") {
      this.commitNumber(card, e.key === "Home" ? this.config.params.min : this.config.params.max);
      return true;
    }
    return false;
  }
}

startPage(NumericPage);
