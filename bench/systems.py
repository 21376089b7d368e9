"""Benchmark of the systems metrics against straightforward references, in one process.

    .venv/bin/python bench/systems.py           # full size
    .venv/bin/python bench/systems.py --quick   # sizes divided by 10

Cases: the bootstrap of system scores over queries (ours: one matrix product per block of
replicates; reference: a Python loop over replicates with pandas means), Nemenyi p-values (ours
against scikit-posthocs, if installed), and the evaluation of per-unit scores with bootstrap intervals
(ours: each resample a row of unit weights, Spearman's ranks from cumulative weights, no sorting
per resample; reference: a loop calling scipy per replicate). Each prints our time, the reference's, the
ratio, and whether the results agree.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.metrics.system_scores import correlation_ci  # noqa: E402
from analysis.metrics.systems import nemenyi, system_scores  # noqa: E402


def timed(func: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        best = min(best, time.perf_counter() - start)
    return best, result


def report(name: str, ours: float, reference: float, agree: bool) -> None:
    print(
        f"{name:<52} ours {ours:8.3f} s  reference {reference:8.3f} s  ratio {reference / ours:7.1f}x  "
        f"{'agree' if agree else 'DIFFER'}"
    )


def bench_bootstrap(n_queries: int, n_systems: int, n_boot: int, repeat: int) -> None:
    rng = np.random.default_rng(1)
    table = pd.DataFrame(rng.uniform(0, 10, (n_queries, n_systems)), columns=[f"s{i}" for i in range(n_systems)])
    table = table.mask(rng.random(table.shape) < 0.1)

    def reference() -> np.ndarray:
        draws = np.random.default_rng(0).integers(0, n_queries, size=(n_boot, n_queries))
        reps = np.array([table.iloc[d].mean().to_numpy() for d in draws])
        return np.nanquantile(reps, [0.025, 0.975], axis=0).T

    t_ours, ours = timed(lambda: system_scores(table, rng=np.random.default_rng(0), n_boot=n_boot), repeat)
    t_ref, ref = timed(reference, 1)
    got = ours.reindex(table.columns)[["ci_low", "ci_high"]].to_numpy()
    report(
        f"system scores bootstrap ({n_queries} queries × {n_systems}, {n_boot})", t_ours, t_ref, np.allclose(got, ref)
    )


def bench_nemenyi(n_queries: int, n_systems: int, repeat: int) -> None:
    try:
        import scikit_posthocs as sp
    except ImportError:
        print("nemenyi: scikit-posthocs is not installed (requirements-dev.txt); skipped")
        return
    rng = np.random.default_rng(2)
    table = pd.DataFrame(rng.normal(size=(n_queries, n_systems)) + np.linspace(0, 1, n_systems))
    t_ours, ours = timed(lambda: nemenyi(table), repeat)
    t_ref, ref = timed(lambda: sp.posthoc_nemenyi_friedman(table.to_numpy()), repeat)
    report(
        f"Nemenyi ({n_queries} queries × {n_systems} systems)",
        t_ours,
        t_ref,
        np.allclose(ours.to_numpy(), ref.to_numpy()),
    )


def bench_correlation(n_units: int, n_boot: int, repeat: int) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=n_units)
    y = x + rng.normal(size=n_units)

    def reference() -> tuple[float, float]:
        draws = np.random.default_rng(0).integers(0, n_units, size=(n_boot, n_units))
        reps = np.array([stats.spearmanr(x[d], y[d]).statistic for d in draws])
        return tuple(np.quantile(reps, [0.025, 0.975]))

    t_ours, ours = timed(lambda: correlation_ci(x, y, "spearman", rng=np.random.default_rng(0), n_boot=n_boot), repeat)
    t_ref, ref = timed(reference, 1)
    report(
        f"Spearman bootstrap ({n_units} units, {n_boot})", t_ours, t_ref, np.allclose([ours.ci_low, ours.ci_high], ref)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    bench_bootstrap(2000 // scale, 10, 1000, args.repeat)
    bench_nemenyi(5000 // scale, 20, args.repeat)
    bench_correlation(20000 // scale, 1000 // scale, args.repeat)


if __name__ == "__main__":
    main()
