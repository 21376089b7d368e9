"""A Celery worker whose analysis pauses in one stage, so that tests can watch or kill it mid-run.

    python -m tests.analysis.slow_worker STAGE SECONDS ATTEMPTS -- <celery worker arguments>

Runs `celery -A evalutron worker ...` in this process after patching ``Progress.stage``: on entering
STAGE during an attempt ≤ ATTEMPTS it waits SECONDS, heartbeating like a busy worker. Production code
has no such hook; only this test launcher adds it.
"""

from __future__ import annotations

import sys
import time

import django


def _patch(stage: str, seconds: float, attempts: int) -> None:
    from analysis.services.attempts import Progress

    original = Progress.stage

    def slow_stage(self: Progress, name: str, percent: int) -> None:
        original(self, name, percent)
        if name != stage or self.attempt > attempts:
            return
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(0.25)
            self.beat()

    Progress.stage = slow_stage  # type: ignore[method-assign]


def main(argv: list[str]) -> None:
    split = argv.index("--")
    stage, seconds, attempts = argv[:split]
    django.setup()
    _patch(stage, float(seconds), int(attempts))
    from evalutron.celery import app

    app.worker_main(argv=argv[split + 1 :])


if __name__ == "__main__":
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalutron.settings")
    main(sys.argv[1:])
