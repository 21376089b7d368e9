/* What every grading page shares: the recorder, the saved-state indicators, dialogs (help,
 * guidelines), audition events from every player, and page-level keys. The rating pages
 * (rating.js) and the ordering page (schemes/ordering.js) build on it; `startPage` starts one. */
import { Recorder } from "./outbox.js";

const QUIET = new Set(["unit_viewed", "audition", "guidelines_viewed", "hint_shown", "page_focus"]);

export function isTyping(el) {
  if (!el) return false;
  if (el.isContentEditable || el.tagName === "TEXTAREA") return true;
  return el.tagName === "INPUT" && !["range", "button", "checkbox", "radio"].includes(el.type);
}

export class Page {
  constructor() {
    this.config = JSON.parse(document.getElementById("grading-config").textContent);
    this.recorder = new Recorder(this.config);
    this.outbox = this.recorder.outbox;
    this.status = document.getElementById("save-status");
    this.pendingByTarget = new Map();
    this.outbox.onChange((kind, detail) => this.onOutbox(kind, detail));
    this.wireDialogs();
    this.wirePlayers();
  }

  record(type, target, payload) {
    const event = this.recorder.record(type, target, payload);
    if (event && !QUIET.has(type)) this.track(event, +1);
    return event;
  }

  key(target) {
    const prefix = target.type === "comment" ? "c" : "";
    return target.unit ? `${prefix}u${target.unit}` : `q${target.query || ""}`;
  }

  track(event, delta) {
    const key = this.key(event);
    this.pendingByTarget.set(key, Math.max(0, (this.pendingByTarget.get(key) || 0) + delta));
  }

  /* The per-target indicator: subclasses say where it is. */
  indicatorFor() {
    return null;
  }

  setIndicator(target, state, text) {
    const el = this.indicatorFor(target);
    if (!el) return;
    el.dataset.state = state;
    el.textContent = text;
  }

  /* Events that only describe what the grader did (viewing, listening, reading, focus) change
   * nothing a grader sees: they never touch a unit's "Saved" / "Not rated" indicator. */
  pendingChanges() {
    return this.outbox.pending().filter((e) => e.campaign === this.config.campaign && !QUIET.has(e.type));
  }

  onOutbox(kind, detail) {
    const pending = this.pendingChanges();
    const quiet = detail && detail.event && QUIET.has(detail.event.type);
    if (kind === "queued" && !quiet) {
      this.setIndicator(detail.event, "saving", "Saving…");
    } else if (kind === "result" && !quiet) {
      const { event, result } = detail;
      this.track(event, -1);
      if (result.status === "rejected") {
        this.setIndicator(event, "error", `Not saved: ${result.error.detail}`);
        this.onRejected(event, result);
      } else {
        this.savedSomething = true;
        if (!this.pendingByTarget.get(this.key(event))) this.onStored(event, result);
      }
    } else if (kind === "offline" || kind === "waiting") {
      for (const e of pending) this.setIndicator(e, "offline", "Kept on this device, will send");
    }
    this.updateStatus(kind, pending.length, detail || {});
  }

  onStored(event) {
    this.setIndicator(event, "saved", "Saved");
  }

  onRejected() {}

  updateStatus(kind, count, detail) {
    if (!this.status) return;
    let state = "saved";
    let text = this.savedSomething ? "All changes saved" : "No changes yet";
    if (kind === "offline" && count) {
      state = "offline";
      text = `Offline: ${count} change${count === 1 ? "" : "s"} kept on this device, retrying`;
      this.status.title = detail.problem || "";
    } else if (kind === "waiting" && count) {
      const seconds = Math.max(1, Math.ceil(detail.retryIn / 1000));
      state = "waiting";
      text = `Busy server: ${count} change${count === 1 ? "" : "s"} kept on this device, sending in ${seconds} s`;
      this.status.title = "The server asked to wait before sending more; nothing is lost.";
    } else if (count) {
      state = "saving";
      text = `Saving ${count}…`;
    }
    this.status.dataset.state = state;
    this.status.textContent = text;
  }

  wireDialogs() {
    this.help = document.getElementById("help");
    this.guidelines = document.getElementById("guidelines");
    const helpButton = document.getElementById("help-button");
    if (helpButton) helpButton.addEventListener("click", () => this.toggleHelp());
    const link = document.getElementById("guidelines-link");
    if (link) {
      link.addEventListener("click", (e) => {
        e.preventDefault();
        this.openGuidelines();
      });
    }
  }

  toggleHelp() {
    if (this.help.open) this.help.close();
    else this.help.showModal();
  }

  openGuidelines() {
    if (this.guidelines.open) return;
    this.guidelines.showModal();
    this.record("guidelines_viewed", null, { version: this.config.guidelinesVersion });
  }

  anyDialogOpen() {
    return (this.help && this.help.open) || (this.guidelines && this.guidelines.open);
  }

  /* Auditions: play, pause, seek and ended with the media position, for every player. */
  wirePlayers() {
    for (const player of document.querySelectorAll("audio.player, video.player")) {
      const target = this.targetOfPlayer(player);
      const log = (action) => this.record("audition", target, { action, position: Math.round(player.currentTime * 1000) / 1000 });
      player.addEventListener("play", () => log("play"));
      player.addEventListener("pause", () => {
        if (!player.ended) log("pause");
      });
      player.addEventListener("seeked", () => log("seek"));
      player.addEventListener("ended", () => log("ended"));
    }
  }

  targetOfPlayer(player) {
    const card = player.closest("[data-unit]");
    if (card) return { unit: Number(card.dataset.unit) };
    return { query: this.config.query };
  }

  togglePlayer(player) {
    if (!player) return;
    if (player.paused) {
      for (const other of document.querySelectorAll("audio.player, video.player")) if (other !== player) other.pause();
      player.play().catch(() => {});
    } else {
      player.pause();
    }
  }

  /* Keys every page knows. Returns true when the key was handled. */
  pageKey(e) {
    if (e.key === "?") {
      this.toggleHelp();
      return true;
    }
    if (this.anyDialogOpen()) return false;
    if (e.key === "g") {
      this.openGuidelines();
      return true;
    }
    if (e.key === "q") {
      this.togglePlayer(document.querySelector(".query .player"));
      return true;
    }
    if ((e.key === "n" && this.config.nextUrl) || (e.key === "p" && this.config.prevUrl)) {
      window.location.href = e.key === "n" ? this.config.nextUrl : this.config.prevUrl;
      return true;
    }
    return false;
  }

  listenKeys(handler) {
    document.addEventListener("keydown", (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (isTyping(e.target)) {
        if (e.key === "Escape") {
          e.target.blur();
          handler({ key: "__focus_active__", preventDefault() {} });
        }
        return;
      }
      if (this.pageKey(e) || (!this.anyDialogOpen() && handler(e))) e.preventDefault();
    });
  }

  /* Active time on a unit counts only while the page is visible and focused: say when that changes. */
  wireFocus() {
    let visible = document.visibilityState === "visible" && document.hasFocus();
    const check = () => {
      const now = document.visibilityState === "visible" && document.hasFocus();
      if (now === visible) return;
      visible = now;
      const target = this.activeTarget();
      if (target) this.record("page_focus", target, { visible: now });
    };
    document.addEventListener("visibilitychange", check);
    window.addEventListener("blur", check);
    window.addEventListener("focus", check);
  }

  /* The unit (or query) the grader is on: subclasses say which. */
  activeTarget() {
    return null;
  }

  start() {
    this.updateStatus("idle", this.pendingChanges().length, {});
    this.wireFocus();
    this.outbox.flush(true);
  }
}

/* Start a page once the document is ready; tests and the console reach it as window.evalutronPage. */
export function startPage(PageClass) {
  document.addEventListener("DOMContentLoaded", () => {
    const page = new PageClass();
    page.start();
    window.evalutronPage = page;
  });
}
