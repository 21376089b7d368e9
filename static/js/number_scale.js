/* A number on a scale, for the pages that have one (BROAD/FINE's FINE, a numeric scale's score): a
 * range slider and a number box that show the same value; typed, dragged or nudged with the arrow
 * keys, which record it once they rest. A page mixes it in: `class X extends NumberScale(RatingPage)`
 * and says `numberEvent` (the event that records it), `numberField` (its judgment field),
 * `numberParams()` (min, max, step) and `rangeSelector` / `numberSelector` (the card's two fields). */
const NUDGE_PAUSE = 600;

function decimals(step) {
  const s = String(step);
  return s.includes(".") ? s.split(".")[1].length : 0;
}

export const NumberScale = (Base) =>
  class extends Base {
    /* The pending nudge of each card (made on first use: the base constructor already wires cards). */
    get nudgeTimers() {
      if (!this._nudgeTimers) this._nudgeTimers = new Map();
      return this._nudgeTimers;
    }

    /* After a number is recorded: what else the scheme does (the FINE hint). */
    numberSet() {}

    wireValues(card) {
      super.wireValues(card);
      const range = card.querySelector(this.rangeSelector);
      const number = card.querySelector(this.numberSelector);
      if (!range || !number) return;
      const params = this.numberParams();
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

    showNumber(card, value, unsetOk) {
      const p = this.numberParams();
      const fixed = Number(value).toFixed(decimals(p.step));
      const range = card.querySelector(this.rangeSelector);
      const number = card.querySelector(this.numberSelector);
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
      clearTimeout(this.nudgeTimers.get(card));
      this.nudgeTimers.delete(card);
      const error = card.querySelector(".field-error");
      if (error) error.hidden = true;
      card.dataset[this.numberField] = String(shown);
      this.record(this.numberEvent, this.unitOf(card), { value: shown });
      this.numberSet(card);
    }

    /* Arrow keys: the value moves at once, the event is recorded when the keys rest. */
    nudge(card, steps) {
      const p = this.numberParams();
      const range = card.querySelector(this.rangeSelector);
      const current = range && range.dataset.unset === undefined ? Number(range.value) : (p.min + p.max) / 2;
      const raw = Math.min(p.max, Math.max(p.min, current + steps * p.step));
      const value = this.showNumber(card, p.min + Math.round((raw - p.min) / p.step) * p.step, false);
      clearTimeout(this.nudgeTimers.get(card));
      this.nudgeTimers.set(card, setTimeout(() => this.commitNumber(card, value), NUDGE_PAUSE));
    }

    /* ArrowLeft / ArrowRight move by a step, with Shift by `bigStep` steps. */
    nudgeKey(card, e, bigStep) {
      if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return false;
      const sign = e.key === "ArrowLeft" ? -1 : 1;
      this.nudge(card, sign * (e.shiftKey ? bigStep : 1));
      return true;
    }

    restoreValue(card, type, value) {
      if (type !== this.numberEvent) {
        super.restoreValue(card, type, value);
        return;
      }
      this.showNumber(card, value, false);
      card.dataset[this.numberField] = String(value);
    }
  };
