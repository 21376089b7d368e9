/* The ordering page: reorder a query's candidates by dragging (pointer events, so mouse, pen and
 * touch all work) or by keyboard, then submit the complete ordering. Each change is an
 * `ordering_changed` event; the submission an `ordering_submitted` one. */
import { Page, startPage } from "../page.js";

class OrderingPage extends Page {
  constructor() {
    super();
    this.list = document.getElementById("order-list");
    this.state = document.getElementById("ordering-state");
    this.submitButton = document.getElementById("submit-ordering");
    this.active = null;
    for (const item of this.items()) this.wireItem(item);
    this.submitButton.addEventListener("click", () => this.submit());
    this.restorePending();
    this.listenKeys((e) => this.onKey(e));
    const first = this.items()[0];
    if (first) this.activate(first);
  }

  items() {
    return Array.from(this.list.querySelectorAll(".order-item"));
  }

  order() {
    return this.items().map((li) => li.dataset.id);
  }

  indicatorFor() {
    return this.state;
  }

  activeTarget() {
    return { query: this.config.query };
  }

  activate(item) {
    if (this.active) this.active.classList.remove("active");
    item.classList.add("active");
    this.active = item;
    if (!item.contains(document.activeElement)) item.focus();
  }

  renumber() {
    this.items().forEach((li, i) => {
      li.querySelector(".rank").textContent = String(i + 1);
    });
  }

  changed() {
    this.renumber();
    this.list.dataset.submitted = "0";
    this.record("ordering_changed", { query: this.config.query }, { items: this.order() });
  }

  onStored(event) {
    if (event.type === "ordering_submitted") {
      this.setIndicator(event, "saved", "Submitted");
      this.showSubmitted();
    } else {
      this.setIndicator(event, "saved", "Saved (not submitted)");
    }
  }

  /* The counter and the "page complete" offer follow the stored submission. */
  showSubmitted() {
    const c = this.config.counts;
    const allDone = c.all_done + c.here - c.here_done;
    document.getElementById("count-here").textContent = `${c.here} of ${c.here} here`;
    document.getElementById("count-all").textContent = `${allDone} of ${c.all} in all`;
    document.getElementById("progress-all").value = allDone;
    document.getElementById("page-complete").hidden = false;
  }

  moveItem(item, delta) {
    if (this.config.readonly) return;
    const items = this.items();
    const i = items.indexOf(item);
    const j = i + delta;
    if (j < 0 || j >= items.length) return;
    if (delta < 0) this.list.insertBefore(item, items[j]);
    else this.list.insertBefore(item, items[j].nextSibling);
    item.focus();
    this.changed();
  }

  submit() {
    if (this.config.readonly) return;
    this.list.dataset.submitted = "1";
    this.record("ordering_submitted", { query: this.config.query }, { items: this.order() });
  }

  wireItem(item) {
    item.addEventListener("focusin", () => this.activate(item));
    item.querySelector(".move-up").addEventListener("click", () => this.moveItem(item, -1));
    item.querySelector(".move-down").addEventListener("click", () => this.moveItem(item, 1));
    item.addEventListener("pointerdown", (e) => this.startDrag(item, e));
  }

  /* Dragging: the item follows the pointer; it is dropped between the items around it. */
  startDrag(item, e) {
    if (this.config.readonly || e.button !== 0 || e.target.closest("button, audio, video, a, input")) return;
    // On a touch screen a swipe over an item scrolls the page; the grip drags.
    if (e.pointerType === "touch" && !e.target.closest(".grip")) return;
    e.preventDefault();
    this.activate(item);
    const before = this.order().join(",");
    item.classList.add("dragging");
    const onMove = (ev) => {
      const siblings = this.items().filter((li) => li !== item);
      const after = siblings.find((li) => {
        const box = li.getBoundingClientRect();
        return ev.clientY < box.top + box.height / 2;
      });
      if (after) this.list.insertBefore(item, after);
      else this.list.appendChild(item);
    };
    // Listen on the window, not the item: the item moves under the pointer while it is dragged.
    const onUp = () => {
      item.classList.remove("dragging");
      window.removeEventListener("pointermove", onMove);
      window.removeEventListener("pointerup", onUp);
      window.removeEventListener("pointercancel", onUp);
      if (this.order().join(",") !== before) this.changed();
    };
    window.addEventListener("pointermove", onMove);
    window.addEventListener("pointerup", onUp);
    window.addEventListener("pointercancel", onUp);
  }

  restorePending() {
    const waiting = this.outbox.pending().filter(
      (e) => e.campaign === this.config.campaign && e.query === this.config.query && e.type.startsWith("ordering_"),
    );
    if (!waiting.length) return;
    const last = waiting[waiting.length - 1];
    const byId = new Map(this.items().map((li) => [li.dataset.id, li]));
    if (last.payload.items.length !== byId.size || !last.payload.items.every((id) => byId.has(id))) return;
    for (const id of last.payload.items) this.list.appendChild(byId.get(id));
    this.renumber();
    this.setIndicator(last, "saving", "Saving…");
  }

  onKey(e) {
    const item = this.active;
    if (e.key === "__focus_active__") {
      if (item) item.focus();
      return true;
    }
    if (!item) return false;
    const items = this.items();
    const i = items.indexOf(item);
    if ((e.shiftKey && e.key === "ArrowUp") || e.key === "u") {
      this.moveItem(item, -1);
      return true;
    }
    if ((e.shiftKey && e.key === "ArrowDown") || e.key === "d") {
      this.moveItem(item, 1);
      return true;
    }
    if (e.key === "j" || e.key === "ArrowDown") {
      if (items[i + 1]) this.activate(items[i + 1]);
      return true;
    }
    if (e.key === "k" || e.key === "ArrowUp") {
      if (items[i - 1]) this.activate(items[i - 1]);
      return true;
    }
    if (e.key === " ") {
      this.togglePlayer(item.querySelector(".player"));
      return true;
    }
    if (e.key === "Enter" && !e.target.closest("button")) {
      this.submit();
      return true;
    }
    return false;
  }
}

startPage(OrderingPage);
