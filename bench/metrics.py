"""Benchmark of the agreement metrics against reference implementations, in one process.

    .venv/bin/python bench/metrics.py           # full size (about a minute)
    .venv/bin/python bench/metrics.py --quick   # sizes divided by 10

Each case prints our time, the reference's time, the ratio and our peak memory (tracemalloc, numpy
allocations included). Times are the best of ``--repeat`` runs. Aims: Fleiss >= 10x the statsmodels
path, Krippendorff >= 2x the `krippendorff` package, each bootstrap under 5 s at 10^5 units. The
bootstrap's sums over 2,000,000 units are timed against the same draws made one replicate at a time
with ``Generator.integers`` (a ratio in one process, which a noisy machine does not move much).
Per-unit confusability of a slice in unit order, as the per-unit table computes it, is timed
against the same function's groupby path, equal to the last bit. The agreement section's two levels
from their distinct count rows are timed against the same figures from the table of every unit.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.metrics import (  # noqa: E402
    fleiss_kappa,
    fleiss_kappa_ci,
    krippendorff_alpha,
    krippendorff_alpha_ci,
    long_to_counts,
)


def timed(func: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        best = min(best, time.perf_counter() - start)
    return best, result


def peak_mib(func: Callable[[], object]) -> float:
    tracemalloc.start()
    func()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def report(name: str, ours: Callable[[], object], reference: Callable[[], object] | None, repeat: int) -> None:
    our_time, our_value = timed(ours, repeat)
    line = f"{name:<44} ours {our_time:8.3f} s"
    if reference is not None:
        ref_time, ref_value = timed(reference, repeat)
        same = np.isclose(float(our_value), float(ref_value), atol=1e-9)
        line += f"   reference {ref_time:8.3f} s   ratio {ref_time / our_time:6.1f}x   agree {same}"
    else:
        line += f"   value {our_value}"
    print(f"{line}   peak {peak_mib(ours):7.1f} MiB", flush=True)


def fleiss_case(n_units: int, repeat: int, graders: list) -> None:
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "unit": np.repeat(np.arange(n_units), 3),
            "grader": np.tile(graders, n_units),
            "value": rng.integers(0, 3, 3 * n_units),
        }
    )

    def ours() -> float:
        return fleiss_kappa(long_to_counts(frame, [0, 1, 2])[0])

    def reference() -> float:
        wide = frame.pivot(index="unit", columns="grader", values="value").to_numpy()
        return sm_fleiss(aggregate_raters(wide, n_cat=3)[0])

    kind = "int" if isinstance(graders[0], int) else "str"
    report(f"Fleiss, long frame, {n_units:.0e} x 3 x 3, {kind} graders", ours, reference, repeat)


def alpha_wide(n_units: int) -> np.ndarray:
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 11, (n_units, 1))
    wide = np.clip(truth + rng.integers(-2, 3, (n_units, 10)), 0, 10).astype(float)
    wide[rng.random(wide.shape) < 0.2] = np.nan
    return wide


def alpha_case(n_units: int, repeat: int) -> None:
    import krippendorff

    wide = alpha_wide(n_units)
    report(
        f"Krippendorff interval, {n_units:.0e} units x 10, 20% NaN",
        lambda: krippendorff_alpha(wide, "interval"),
        lambda: krippendorff.alpha(reliability_data=wide.T, level_of_measurement="interval"),
        repeat,
    )


def bootstrap_cases(n_units: int, n_boot: int, repeat: int) -> None:
    rng = np.random.default_rng(2)
    counts = long_to_counts(
        pd.DataFrame(
            {
                "unit": np.repeat(np.arange(n_units), 3),
                "grader": np.tile(["a", "b", "c"], n_units),
                "value": rng.integers(0, 3, 3 * n_units),
            }
        ),
        [0, 1, 2],
    )[0]
    wide = alpha_wide(n_units)
    report(
        f"Fleiss bootstrap {n_boot} x {n_units:.0e} units",
        lambda: fleiss_kappa_ci(counts, rng=np.random.default_rng(0), n_boot=n_boot).ci_low,
        None,
        repeat,
    )
    report(
        f"Krippendorff interval bootstrap {n_boot} x {n_units:.0e}",
        lambda: krippendorff_alpha_ci(wide, "interval", rng=np.random.default_rng(0), n_boot=n_boot).ci_low,
        None,
        repeat,
    )


def blocked_sums_case(n_units: int, n_boot: int, repeat: int) -> None:
    """The bootstrap's sums over more than ``UNITS_AT_ONCE`` units (interval alpha's four moments
    per unit, as at 10^7 judgments), against the same draws made as ``Generator.integers`` makes
    them, one replicate at a time through every block, on as many threads: the sums must be equal
    to the last bit."""
    from concurrent.futures import ThreadPoolExecutor

    from analysis.metrics import bootstrap

    moments = np.random.default_rng(3).random((n_units, 4))
    columns = np.ascontiguousarray(moments.T)
    lengths = np.minimum(bootstrap.UNIT_BLOCK, n_units - np.arange(0, n_units, bootstrap.UNIT_BLOCK))

    def ours() -> np.ndarray:
        units = np.ones(n_units, dtype=np.int64)
        return bootstrap.bootstrap_sums(units, moments, lambda s: s, rng=np.random.default_rng(0), n_boot=n_boot)

    def replicate(own: np.random.Generator) -> np.ndarray:
        out, begin = np.zeros(4), 0
        for length, drawn in zip(lengths.tolist(), own.multinomial(n_units, lengths / n_units).tolist(), strict=True):
            counts = np.bincount(own.integers(0, length, size=drawn), minlength=length)
            out += columns[:, begin : begin + length] @ counts.astype(float)
            begin += length
        return out

    def reference() -> np.ndarray:
        generators = bootstrap.replicate_generators(np.random.default_rng(0), n_boot)
        with ThreadPoolExecutor(bootstrap._threads(n_boot)) as pool:
            return np.stack(list(pool.map(replicate, generators)))

    our_time, our_sums = timed(ours, repeat)
    ref_time, ref_sums = timed(reference, repeat)
    print(
        f"{f'Blocked bootstrap sums {n_boot} x {n_units:.0e} units':<44} ours {our_time:8.3f} s"
        f"   reference {ref_time:8.3f} s   ratio {ref_time / our_time:6.2f}x"
        f"   equal {np.array_equal(our_sums, ref_sums)}",
        flush=True,
    )


def confusability_case(n_units: int, repeat: int) -> None:
    """Per-unit confusability of a slice of judgments in unit order (the per-unit table's, five
    FINE scores a unit), against the same function's groupby path (units as text, which it groups):
    the figures must be equal to the last bit."""
    from analysis.metrics import unit_confusability

    rng = np.random.default_rng(4)
    unit = np.repeat(np.arange(1, n_units + 1), 5)
    frame = pd.DataFrame(
        {
            "unit": unit,
            "grader": np.tile(np.arange(5), n_units),
            "value": np.clip(np.round(rng.normal(5, 2, unit.size), 1), 0, 10),
        }
    )
    grouped = frame.assign(unit=frame["unit"].map("u{:08d}".format))  # zero-padded: the same order as text

    our_time, ours = timed(lambda: unit_confusability(frame.copy()), repeat)
    ref_time, reference = timed(lambda: unit_confusability(grouped.copy()), repeat)
    equal = np.array_equal(ours.to_numpy(), reference.to_numpy(), equal_nan=True)
    print(
        f"{f'Unit confusability, {n_units:.0e} units x 5':<44} ours {our_time:8.3f} s"
        f"   reference {ref_time:8.3f} s   ratio {ref_time / our_time:6.2f}x   equal {equal}",
        flush=True,
    )


def levels_case(n_units: int, n_boot: int, repeat: int) -> None:
    """The agreement section's two levels (NS/SS/VS, and NS against SS+VS) of a count table of five
    judgments a unit: kappa with its interval, per-category kappas, patterns and kinds, from the
    distinct rows and how many units have each (as the section computes them), against the same
    functions on the table of every unit. The intervals must be the same to the bit."""
    from analysis.metrics import (
        collapse_counts,
        collapse_groups,
        distinct_rows,
        fleiss_kappa_per_category,
        kind_summary,
        pattern_table,
    )

    rng = np.random.default_rng(5)
    shares = rng.dirichlet([0.7, 0.7, 0.7], 4096)
    table = np.array([rng.multinomial(5, shares[i]) for i in rng.integers(0, 4096, n_units)], dtype=np.uint8)
    labels, mapping = ["NS", "SS", "VS"], {"SS": "S", "VS": "S"}

    def figures(rows: np.ndarray, sizes: np.ndarray | None, names: list[str]) -> tuple:
        est = fleiss_kappa_ci(rows, sizes=sizes, rng=np.random.default_rng(1), n_boot=n_boot)
        per = fleiss_kappa_per_category(rows, sizes=sizes)
        return est, per, pattern_table(rows, names, sizes=sizes), kind_summary(rows, sizes=sizes)

    def ours() -> list[tuple]:
        rows, _, sizes = distinct_rows(table)
        merged, merged_sizes, names = collapse_groups(rows, sizes, labels, mapping)
        return [figures(rows, sizes, labels), figures(merged, merged_sizes, names)]

    def reference() -> list[tuple]:
        collapsed, names = collapse_counts(table, labels, mapping)
        return [figures(table, None, labels), figures(collapsed, None, names)]

    our_time, got = timed(ours, repeat)
    ref_time, expected = timed(reference, repeat)
    same = all(
        g[0].ci_low == e[0].ci_low
        and g[0].ci_high == e[0].ci_high
        and np.isclose(g[0].value, e[0].value, rtol=0, atol=1e-12)
        and np.allclose(g[1], e[1], rtol=0, atol=1e-12)
        and g[2][["pattern", "count"]].equals(e[2][["pattern", "count"]])
        and g[3] == e[3]
        for g, e in zip(got, expected, strict=True)
    )
    print(
        f"{f'Two levels, {n_units:.0e} units x 5, {n_boot} draws':<44} ours {our_time:8.3f} s"
        f"   reference {ref_time:8.3f} s   ratio {ref_time / our_time:6.1f}x   same {same}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes divided by 10")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (best is reported)")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    fleiss_case(10**6 // scale, args.repeat, [101, 102, 103])  # ids, as the analysis jobs read them
    fleiss_case(10**6 // scale, args.repeat, ["ann", "ben", "cat"])  # labels, as in a CSV file
    alpha_case(10**4 // scale, args.repeat)
    alpha_case(10**5 // scale, args.repeat)
    bootstrap_cases(10**5 // scale, 1000, 1)
    blocked_sums_case(2 * 10**6, 1000 // scale, args.repeat)  # 2 * 10**6 units at any scale: beyond UNITS_AT_ONCE
    confusability_case(10**5, args.repeat)  # a slice of the combining step's (about 500,000 judgments)
    levels_case(2 * 10**6 // scale, 1000, args.repeat)  # the combining step's at 10^7 judgments


if __name__ == "__main__":
    main()
