/* The categorical page: one of the campaign's labels by click, or by its position typed as digits
 * (the 12th label is 1 then 2). */
import { startPage } from "../page.js";
import { RatingPage } from "../rating.js";

class CategoricalPage extends RatingPage {
  get choiceEvent() {
    return "label_set";
  }

  isComplete(j) {
    return Boolean(j.label);
  }

  schemeKey(card, e) {
    if (/^[0-9]$/.test(e.key)) {
      this.typeDigit(card, e.key);
      return true;
    }
    return false;
  }
}

startPage(CategoricalPage);
