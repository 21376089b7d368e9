"""The embedded runner: without a broker, a background thread of the web process does the workers'
and beat's job — sweep runs whose execution died, and execute queued runs once they are due.

Between passes it waits for whichever comes first: a run queued in this process (dispatch sets an
event, so the run starts at once), the start time of the earliest queued run (an automatic run's
debounce ends), or POLL_SECONDS (to sweep, and to see runs queued by other processes).

It starts with the process's first request (so management commands and tests start none) and
never works inside a request: pages and the progress poll only read. Off with
ANALYSIS_EMBEDDED_THREAD=false; `python manage.py run_due_analyses` does one pass by hand.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.conf import settings
from django.db import connection

from analysis.services import runs

logger = logging.getLogger(__name__)
POLL_SECONDS = 5.0

_lock = threading.Lock()
_stop = threading.Event()
_thread: threading.Thread | None = None


def runner_ensure_started(**_signal: Any) -> bool:
    """Start the runner thread once per process (embedded, and unless turned off). True if running."""
    global _thread
    if not getattr(settings, "ANALYSIS_EMBEDDED_THREAD", True) or not runs.embedded():
        return False
    with _lock:
        if _thread is None or not _thread.is_alive():
            _stop.clear()
            _thread = threading.Thread(target=_loop, name="analysis-embedded-runner", daemon=True)
            _thread.start()
    return True


def runner_stop(*, timeout: float = 30.0) -> None:
    """Stop the runner thread after its current pass (tests, and a clean shutdown)."""
    _stop.set()
    runs.runs_queued_notify()
    if _thread is not None:
        _thread.join(timeout=timeout)


def runner_pass() -> int:
    """One pass: sweep lost runs, execute the due ones. Returns how many runs were executed."""
    runs.run_sweep_stale()
    return runs.runs_execute_due()


def _loop() -> None:
    while not _stop.is_set():
        pause = POLL_SECONDS
        try:
            runner_pass()
            pause = _pause()
        except Exception:  # a thread has no caller to tell; a failing run records its own error
            logger.exception("embedded analysis runner: pass failed")
        finally:
            connection.close()
        if not _stop.is_set():
            runs.runs_queued_wait(timeout=pause)


def _pause() -> float:
    """Until the earliest queued run is due, at most POLL_SECONDS. A run already due was just
    tried (and left queued after a database error): wait the full period, never spin."""
    due_in = runs.run_next_due_in()
    return POLL_SECONDS if due_in is None or due_in <= 0 else min(POLL_SECONDS, due_in)
