/* Evalutron event recorder and outbox.
 *
 * Every interaction becomes an event with a client UUID (the server's idempotency key), a
 * per-page-session id, a sequence number and a client timestamp. Events go to localStorage first
 * and are then sent in batches; whatever the network does, they stay until the server has answered
 * for them (stored, replayed, or rejected), and sending is retried with exponential backoff. A
 * closed laptop or a reload loses nothing: the next page load sends what is left.
 *
 * An answer of 4xx to the whole request (a body the server cannot take at all) is not retried
 * forever: the batch is sent again one event at a time, and the event that is refused on its own
 * is dropped and reported as rejected, with the server's reason, so the page can show the grader
 * what was not saved. 401, 403 (logged out), 408 and 429 (busy) are retried: the events are fine.
 * When the server says how long to wait (429 or 503 with Retry-After), nothing is sent before that
 * time, whatever else happens meanwhile (new events, the browser coming back online): the events
 * wait on this device, and the page says it is waiting, not that anything failed.
 */
(function () {
  "use strict";

  const STORAGE_KEY = "evalutron.outbox.v1";
  const BATCH = 100;
  const MAX_DELAY = 30000;
  const RETRY_STATUSES = new Set([401, 403, 408, 429]);
  const MAX_TOLD_WAIT = 3600000; // a Retry-After beyond an hour is read as an hour

  /* The wait a response asks for, in ms (Retry-After in seconds or as an HTTP date), or null. */
  function toldWait(response) {
    if (response.status !== 429 && response.status !== 503) return null;
    const header = (response.headers.get("Retry-After") || "").trim();
    if (!header) return null;
    const ms = /^\d+$/.test(header) ? Number(header) * 1000 : Date.parse(header) - Date.now();
    return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), MAX_TOLD_WAIT) : null;
  }

  function uuid() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    // Fallback for old browsers and non-secure origins: RFC 4122 v4 from getRandomValues.
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  function csrfToken() {
    const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (m) return decodeURIComponent(m[1]);
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function load() {
    try {
      const items = JSON.parse(localStorage.getItem(STORAGE_KEY) || "[]");
      return Array.isArray(items) ? items : [];
    } catch (e) {
      return [];
    }
  }

  function save(items) {
    try {
      localStorage.setItem(STORAGE_KEY, JSON.stringify(items));
    } catch (e) {
      /* storage full or disabled: the in-memory copy still gets sent */
    }
  }

  class Outbox {
    constructor(url) {
      this.url = url;
      this.memory = load();
      this.sending = false;
      this.delay = 1000;
      this.timer = null;
      this.listeners = [];
      this.lastProblem = null;
      this.oneByOne = false; // after a 4xx to a batch: find the event the server refuses
      this.notBefore = 0; // Date.now() before which the server asked us not to send
      window.addEventListener("online", () => this.flush(true));
      window.addEventListener("storage", (e) => {
        if (e.key === STORAGE_KEY) this.memory = load();
      });
    }

    pending() {
      return load();
    }

    onChange(fn) {
      this.listeners.push(fn);
    }

    emit(kind, detail) {
      for (const fn of this.listeners) fn(kind, detail);
    }

    add(event) {
      const items = load();
      items.push(event);
      save(items);
      this.memory = items;
      this.emit("queued", { event });
      this.flush(true);
    }

    remove(ids) {
      const gone = new Set(ids);
      const items = load().filter((e) => !gone.has(e.id));
      save(items);
      this.memory = items;
    }

    schedule(ms) {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.flush(false), ms);
    }

    async flush(soon) {
      if (this.sending) {
        this.again = true;
        return;
      }
      const items = load();
      if (!items.length) {
        this.emit("idle", {});
        return;
      }
      if (soon) this.delay = 1000;
      const wait = this.notBefore - Date.now();
      if (wait > 0) {
        this.emit("waiting", { count: items.length, retryIn: wait });
        this.schedule(wait);
        return;
      }
      this.sending = true;
      const batch = items.slice(0, this.oneByOne ? 1 : BATCH);
      this.emit("sending", { count: items.length });
      try {
        const response = await fetch(this.url, {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
          body: JSON.stringify(batch),
        });
        const told = toldWait(response);
        if (told !== null) {
          // Busy: not a failure. Send again when told, at the usual pace after that.
          this.notBefore = Date.now() + told;
          this.sending = false;
          this.lastProblem = null;
          this.emit("waiting", { count: load().length, retryIn: told });
          this.schedule(told);
          return;
        }
        if (response.status >= 400 && response.status < 500 && !RETRY_STATUSES.has(response.status)) {
          await this.refused(batch, response);
          this.sending = false;
          this.flush(true);
          return;
        }
        if (response.status !== 200) throw new Error(`HTTP ${response.status}`);
        this.oneByOne = false;
        const body = await response.json();
        this.remove(body.results.map((r) => batch[r.index].id));
        this.delay = 1000;
        this.lastProblem = null;
        for (const r of body.results) this.emit("result", { event: batch[r.index], result: r });
      } catch (err) {
        this.lastProblem = String(err && err.message ? err.message : err);
        this.emit("offline", { count: load().length, problem: this.lastProblem, retryIn: this.delay });
        this.schedule(this.delay);
        this.delay = Math.min(this.delay * 2, MAX_DELAY);
        this.sending = false;
        return;
      }
      this.sending = false;
      if (load().length) {
        this.flush(true);
      } else {
        this.again = false;
        this.emit("idle", {});
      }
    }
  }

  Outbox.prototype.refused = async function (batch, response) {
    if (batch.length > 1) {
      this.oneByOne = true; // one of these the server cannot take: send them singly to find it
      return;
    }
    let error = { code: "refused", detail: `the server refused this change (HTTP ${response.status})` };
    try {
      const body = await response.json();
      if (body && body.detail) error = body;
    } catch (e) {
      /* not JSON: keep the generic reason */
    }
    this.remove([batch[0].id]);
    this.emit("result", { event: batch[0], result: { id: batch[0].id, status: "rejected", http_status: response.status, error } });
  };

  /* A page session: stamps events and hands them to the outbox. */
  class Recorder {
    constructor(config) {
      this.config = config;
      this.session = uuid();
      this.seq = 0;
      this.outbox = new Outbox(config.eventsUrl);
    }

    record(type, target, payload) {
      if (this.config.readonly) return null;
      const event = {
        id: uuid(),
        campaign: this.config.campaign,
        type,
        payload: payload || {},
        client_ts: new Date().toISOString(),
        seq: ++this.seq,
        session_id: this.session,
      };
      if (target && target.unit) event.unit = target.unit;
      if (target && target.query) event.query = target.query;
      this.outbox.add(event);
      return event;
    }
  }

  window.Evalutron = Object.assign(window.Evalutron || {}, { Outbox, Recorder, uuid });
})();

// Loaded as an ES module by page.js: what the other modules import.
export const { Outbox, Recorder, uuid } = window.Evalutron;
