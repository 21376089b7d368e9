"""Memory of the organizer downloads: streamed ground truth (CSV, JSON, Parquet) and the judgments
CSV against the in-memory ground-truth export, at two campaign sizes, in one process.

    .venv/bin/python bench/downloads.py                   # 50,000 and 200,000 units
    .venv/bin/python bench/downloads.py --sizes 100000 1000000

A scratch SQLite database under a temporary folder gets a campaign of N units, one analysis run
with N stored unit results and 2N judgments. For each download the peak of Python allocations
(tracemalloc) while the whole body is consumed is printed, with the ratio of the streamed peak to
the in-memory export's peak. A flat download keeps about the same peak at both sizes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def setup(data_dir: str) -> None:
    os.environ.update(
        {
            "DEBUG": "true",
            "DATA_DIR": data_dir,
            "EVALUTRON_ENV_FILE": "",
            "DJANGO_SETTINGS_MODULE": "evalutron.settings",
        }
    )
    os.environ.pop("DATABASE_URL", None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def seed(n: int) -> tuple:
    import numpy as np
    import pandas as pd
    from django.contrib.auth import get_user_model

    from analysis import unit_blocks
    from analysis.models import AnalysisRun, RunStatus
    from grading.models import Candidate, Judgment, Unit
    from grading.services.campaigns import campaign_create, role_grant

    campaign = campaign_create(
        name=f"bench {n}",
        slug=f"bench-{n}-{time.time_ns()}",
        scheme="numeric",
        scheme_params={"min": 0, "max": 10, "step": 1},
    )
    graders = [get_user_model().objects.create_user(username=f"g{i}-{campaign.pk}") for i in range(2)]
    for g in graders:
        role_grant(campaign=campaign, user=g, role="grader")
    Candidate.objects.bulk_create(
        [Candidate(campaign=campaign, external_id=f"c{i}", text="x") for i in range(n)], batch_size=5000
    )
    cands = list(Candidate.objects.filter(campaign=campaign).values_list("pk", flat=True))
    Unit.objects.bulk_create(
        [Unit(campaign=campaign, external_id=f"u{i}", candidate_id=c) for i, c in enumerate(cands)], batch_size=5000
    )
    units = list(Unit.objects.filter(campaign=campaign).values_list("pk", flat=True))
    run = AnalysisRun.objects.create(
        campaign=campaign, number=1, status=RunStatus.SUCCEEDED, result={}, parameters={"n_boot": 10}
    )
    i = np.arange(len(units))
    stored = pd.DataFrame({"unit": np.asarray(units, dtype=np.int64), "n": 2, "mean": i % 10 + 0.5})
    stored = stored.assign(median=stored["mean"], majority=(i % 10).astype(float), dif=1.0)
    stored = stored.assign(std=0.7071067811865476, entropy=1.0)
    unit_blocks.write(run.pk, stored)
    Judgment.objects.bulk_create(
        [
            Judgment(campaign=campaign, grader=g, unit_id=u, score=float(i % 11))
            for g in graders
            for i, u in enumerate(units)
        ],
        batch_size=5000,
    )
    return campaign, run


def peak(consume) -> tuple[float, float]:
    tracemalloc.start()
    started = time.perf_counter()
    consume()
    seconds = time.perf_counter() - started
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top / 2**20, seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[50_000, 200_000])
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        setup(data_dir)
        from analysis import export, streams

        print(f"{'units':>9} {'download':<28} {'peak MB':>9} {'seconds':>8} {'peak / in-memory':>17}")
        for n in args.sizes:
            measure(n, *seed(n), export=export, streams=streams)


def measure(n: int, campaign, run, *, export, streams) -> None:
    def drain(chunks) -> None:
        for _ in chunks:
            pass

    filters = export.Filters()
    ref, ref_s = peak(lambda: export.ground_truth_bytes(run, filters, "csv"))
    print(f"{n:>9} {'ground truth CSV, in memory':<28} {ref:>9.1f} {ref_s:>8.2f} {1.0:>17.2f}")
    cases = {
        "ground truth CSV, streamed": lambda: drain(streams.ground_truth_csv(run, filters)),
        "ground truth JSON, streamed": lambda: drain(streams.ground_truth_json(run, filters)),
        "ground truth Parquet, file": lambda: streams.ground_truth_parquet(run, filters).close(),
        "judgments CSV, streamed": lambda: drain(streams.judgments_csv(campaign)),
    }
    for name, consume in cases.items():
        mb, s = peak(consume)
        print(f"{n:>9} {name:<28} {mb:>9.1f} {s:>8.2f} {mb / ref:>17.2f}")


if __name__ == "__main__":
    main()
