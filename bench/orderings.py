"""Benchmark of the ordering metrics: exact FreSPA against pattern enumeration, large k, ED.

    .venv/bin/python bench/orderings.py           # full size (about half a minute)
    .venv/bin/python bench/orderings.py --quick   # smaller k and fewer queries

Golds are noisy copies of a base ordering (k // 4 random adjacent swaps each): realistic partial
agreement. Times are the best of ``--repeat`` runs (single runs for the large cases).
Aims: exact >= 20x faster than enumeration at k = 12; k = 40 under 0.5 s; k = 100 under 10 s;
the ED of every method for a 10-query campaign under 2 s.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.metrics import evaluation_discriminativeness, frespa  # noqa: E402
from analysis.metrics._frespa_enum import frespa_enumerate  # noqa: E402


def timed(func: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, result = math.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        best = min(best, time.perf_counter() - start)
    return best, result


def noisy_golds(rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    """n copies of a random base ordering, each with k // 4 random adjacent swaps."""
    out = np.tile(rng.permutation(k), (n, 1))
    for row in out:
        for i in rng.integers(0, k - 1, max(1, k // 4)):
            row[[i, i + 1]] = row[[i + 1, i]]
    return out


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def against_enumeration(rng: np.random.Generator, sizes: list[int], repeat: int) -> None:
    print("FreSPA exact vs enumeration (n = 10, min_sup = 0.75)")
    print(f"{'k':>4} {'exact s':>10} {'enum s':>10} {'ratio':>8}  equal")
    for k in sizes:
        *golds, target = noisy_golds(rng, k, 11)  # the target: one more noisy copy
        golds = np.array(golds)
        t_exact, exact = timed(lambda g=golds, t=target: frespa(g, t), repeat)
        t_enum, enum = timed(lambda g=golds, t=target: frespa_enumerate(g.tolist(), t.tolist()), max(1, repeat // 3))
        aim = f"  aim >= 20x: {verdict(t_enum / t_exact >= 20)}" if k == 12 else ""
        print(f"{k:>4} {t_exact:>10.5f} {t_enum:>10.5f} {t_enum / t_exact:>7.1f}x  {abs(exact - enum) < 1e-12}{aim}")


def exact_alone(rng: np.random.Generator, cases: list[tuple[int, int, float]]) -> None:
    print("\nFreSPA exact alone (min_sup = 0.75, one target)")
    print(f"{'k':>4} {'n':>3} {'seconds':>10}  score")
    for k, n, aim in cases:
        *golds, target = noisy_golds(rng, k, n + 1)
        golds = np.array(golds)
        seconds, score = timed(lambda g=golds, t=target: frespa(g, t), 1)
        note = f"  aim < {aim:g} s: {verdict(seconds < aim)}" if math.isfinite(aim) else ""
        print(f"{k:>4} {n:>3} {seconds:>10.3f}  {score:.6f}{note}")


def campaign_ed(rng: np.random.Generator, n_queries: int, k: int, n: int) -> None:
    queries = [noisy_golds(rng, k, n) for _ in range(n_queries)]
    seconds, eds = timed(lambda: [evaluation_discriminativeness(q) for q in queries], 1)
    mean = {m: float(np.mean([e[m] for e in eds])) for m in eds[0]}
    print(
        f"\nED of every method, {n_queries} queries (k = {k}, n = {n}): {seconds:.3f} s"
        + (f"  aim < 2 s: {verdict(seconds < 2)}" if n_queries == 10 else "")
    )
    print("  " + "  ".join(f"{m} {v:.3f}" for m, v in mean.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.quick:
        against_enumeration(rng, [8, 10], args.repeat)
        exact_alone(rng, [(40, 10, 0.5), (60, 10, math.inf), (30, 20, math.inf)])
        campaign_ed(rng, 3, 20, 10)
    else:
        against_enumeration(rng, [8, 10, 12], args.repeat)
        exact_alone(rng, [(40, 10, 0.5), (100, 10, 10.0), (40, 20, math.inf), (60, 20, math.inf)])
        campaign_ed(rng, 10, 20, 10)


if __name__ == "__main__":
    main()
