/* The pairwise page: which of two candidates, A or B, or equal: by click, or the keys a / 1, e / = / 2,
 * b / 3. */
import { startPage } from "../page.js";
import { RatingPage } from "../rating.js";

const KEYS = { a: "A", 1: "A", e: "equal", "=": "equal", 2: "equal", b: "B", 3: "B" };

class PairwisePage extends RatingPage {
  get choiceEvent() {
    return "pairwise_set";
  }

  isComplete(j) {
    return Boolean(j.verdict);
  }

  schemeKey(card, e) {
    if (!KEYS[e.key]) return false;
    this.choose(card, KEYS[e.key]);
    return true;
  }
}

startPage(PairwisePage);
