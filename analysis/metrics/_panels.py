"""The bias + noise fit on panels (docs/design.md §5.6, "Model-based truth": how the numeric fit is
computed).

A *panel* is the set of units judged by the same graders. Within a panel every unit has the same
weights ``w_g = 1/σ_g²``, so a unit's score ``t_u = Σ_g w_g (y_gu − b_g) / Σ_g w_g`` is the same
weighted sum of the panel's columns for every unit, and each grader's sums over their units are
sums over columns. Laid out as one (graders × units) matrix per panel, an iteration is a few
passes over contiguous columns, with no per-judgment lookup of a unit or a grader and no scatter
into bins (``np.add.at``): at 10^7 judgments by five graders the fit takes 0.3 s, against 1.8 s
over the judgments' rows, and laying the panels out 0.2–0.5 s.

The sums are the same sums, grouped by panel: the figures equal those of the rows' computation to
rounding (tests hold them to 1e-10). Every sum is numpy's own over an array (no BLAS, whose
rounding can differ between processors), so the same judgments give the same figures to the last
bit, whether they came as one frame or in slices. Panels pay while they are few: with many
graders, or a crowd whose every unit has graders of its own, the fit runs over the rows as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from . import _ds_em
from .shapes import runs

MAX_GRADERS = 63  # a unit's graders as an int64 bit mask
PANEL_JUDGMENTS = 10_000  # panels are used while there is at most one per so many judgments


@dataclass(frozen=True)
class Panels:
    """Numeric judgments by panel.

    units, graders : the sorted ids of the units and graders with a judgment (``Coded``'s).
    members : per panel, (k,) its graders' codes, ascending.
    rows : per panel, (n,) its units' codes (positions in ``units``), ascending.
    values : per panel, (k, n): ``values[p][j, i]`` is the number ``members[p][j]`` gave ``rows[p][i]``.
    """

    units: np.ndarray
    graders: np.ndarray
    members: list[np.ndarray]
    rows: list[np.ndarray]
    values: list[np.ndarray]

    @property
    def judgments(self) -> int:
        return sum(v.size for v in self.values)


class Codes(Protocol):
    """``dawid_skene.Coded``: what ``panels_of`` reads."""

    unit: np.ndarray
    grader: np.ndarray
    value: np.ndarray
    units: np.ndarray
    graders: np.ndarray


def panels_of(c: Codes) -> Panels | None:
    """Coded numeric judgments (``dawid_skene.Coded``) by panel; None when panels do not pay: more
    than ``MAX_GRADERS`` graders, more than one panel per ``PANEL_JUDGMENTS`` judgments, or rows
    not in strict (unit, grader) order (an analysis run's come so; a ratings file's may not).
    A pair held twice breaks the strict order, so it is left to the rows' fit, which names it."""
    unit, grader, value = c.unit, c.grader, c.value
    n = value.size
    if not n or not unit.size == grader.size == n or not PanelsBuilder.possible(c.graders):
        return None
    builder = PanelsBuilder(c.units, c.graders)  # ``look`` finds rows out of order, block by block
    ends = _unit_ends(unit)
    if not all(builder.look(unit[a:b], grader[a:b]) for a, b in ends) or not builder.lay_out():
        return None
    for a, b in ends:
        builder.fill(unit[a:b], value[a:b])
    return builder.panels()


def _unit_ends(unit: np.ndarray) -> list[tuple[int, int]]:
    """Blocks of about ``_ds_em.CHUNK`` rows cut between units, when ``unit`` is in order (else
    cut anywhere: ``PanelsBuilder.look`` then finds the rows out of order)."""
    ends, start = [], 0
    while start < unit.size:
        stop = min(start + _ds_em.CHUNK, unit.size)
        if stop < unit.size:  # the whole of the last unit it reaches
            stop = max(stop, int(np.searchsorted(unit, unit[stop - 1], side="right")))
        ends.append((start, stop))
        start = stop
    return ends


class PanelsBuilder:
    """Judgments by panel, read in two passes over the rows with a number, a block of whole units at
    a time in (unit, grader) order: ``look`` at each block's units and graders, ``lay_out`` the
    panels, then ``fill`` each block's values in the same order; ``panels``. No array of every
    judgment's codes is held, only the panels' values and a few numbers a unit (``sections.model``
    reads the slices so: at 10^7 judgments the codes and the panels together were 210 MB).

    units, graders : every unit and grader that may come (sorted ids); the blocks give positions in
    them. Units and graders with no row are left out, as ``Coded`` leaves them out, so the same
    judgments give the same panels, to the last bit, whichever way they come."""

    def __init__(self, units: np.ndarray, graders: np.ndarray) -> None:
        self.units, self.graders = units, graders
        self.mask = np.zeros(units.size, dtype=np.int64)  # each unit's graders, a bit each
        self.last: tuple[int, int] = (-1, -1)  # the (unit, grader) of the last row looked at
        self.rows = 0

    @staticmethod
    def possible(graders: np.ndarray) -> bool:
        return graders.size <= MAX_GRADERS

    def look(self, unit: np.ndarray, grader: np.ndarray) -> bool:
        """False when the rows are not in strict (unit, grader) order after those before them."""
        if not unit.size:
            return True
        if not ((int(unit[0]), int(grader[0])) > self.last and strictly_ordered(unit, grader)):
            return False
        self.last = (int(unit[-1]), int(grader[-1]))
        np.add.at(self.mask, unit, np.left_shift(1, grader.astype(np.int64)))  # a pair once: adding is or-ing
        self.rows += unit.size
        return True

    def lay_out(self) -> bool:
        """Number the panels; False when there are more than one per ``PANEL_JUDGMENTS`` rows."""
        panel, masks = pd.factorize(self.mask, sort=True)  # masks ascending; 0 (no row) first, if any
        empty = masks.size > 0 and masks[0] == 0
        if not self.rows or (masks.size - empty) * PANEL_JUDGMENTS > self.rows:
            return False
        self.held = self.mask != 0  # units with a row
        bits = np.bitwise_or.reduce(self.mask)
        del self.mask
        self.present = np.flatnonzero((bits >> np.arange(self.graders.size)) & 1)  # graders with a row
        code = np.full(self.graders.size, -1)
        code[self.present] = np.arange(self.present.size)
        self.panel = panel.astype(np.int16 if masks.size < 2**15 else np.int32)  # sorted by radix, not merging
        del panel
        self.sizes = np.bincount(self.panel, minlength=masks.size)
        # the units, panel by panel, each in unit order
        order = np.argsort(self.panel, kind="stable").astype(_narrow(self.held.size))
        self.members, self.of_panel, self.shapes = [], [], []
        offsets = np.zeros(masks.size, dtype=np.int64)  # where each panel's values begin
        at = taken = 0
        for p, (mask_p, size) in enumerate(zip(masks.tolist(), self.sizes.tolist(), strict=True)):
            units_p = order[taken : taken + size]
            taken += size
            if mask_p == 0:
                continue
            members = code[np.flatnonzero((mask_p >> np.arange(self.graders.size)) & 1)]
            self.members.append(members)
            self.of_panel.append(units_p)
            self.shapes.append((members.size, size))
            offsets[p] = at
            at += members.size * size
        # the j-th row of unit u goes to start[u] + j · (its panel's units): a panel's values are
        # (graders × units), each grader's values in unit order
        self.start = np.empty(self.held.size, dtype=np.int64)
        self.start[order] = np.arange(order.size) - np.repeat(np.cumsum(self.sizes) - self.sizes, self.sizes)
        self.start += offsets[self.panel]
        self.values = np.empty(at)
        return True

    def fill(self, unit: np.ndarray, value: np.ndarray) -> None:
        """A block's values, in the order ``look`` had its rows."""
        if not unit.size:
            return
        first, rows = runs(unit)
        j = np.arange(unit.size) - np.repeat(first, rows)  # each row's place in its unit
        self.values[self.start[unit] + j * self.sizes[self.panel[unit]]] = value

    def panels(self) -> Panels:
        values, at = [], 0
        for k, n in self.shapes:
            values.append(self.values[at : at + k * n].reshape(k, n))
            at += k * n
        rank = np.cumsum(self.held, dtype=_narrow(self.held.size)) - 1  # each unit's code among those with a row
        rows = [rank[units] for units in self.of_panel]
        return Panels(self.units[self.held], self.graders[self.present], self.members, rows, values)


def _narrow(n: int) -> type:
    return np.int32 if n < 2**31 else np.int64


def strictly_ordered(unit: np.ndarray, grader: np.ndarray) -> bool:
    """Rows in strictly increasing (unit, grader) order, checked a block at a time."""
    for b in _ds_em.blocks(unit.size):
        stop = min(b.stop + 1, unit.size)  # each block with the next block's first row
        u, g = unit[b.start : stop], grader[b.start : stop]
        if not ((u[1:] > u[:-1]) | ((u[1:] == u[:-1]) & (g[1:] > g[:-1]))).all():
            return False
    return True


@dataclass(frozen=True)
class PanelFit:
    score: np.ndarray  # (n_units,) in unit order
    score_se: np.ndarray
    bias: np.ndarray
    var: np.ndarray
    per_grader: np.ndarray
    log_likelihood: float
    iterations: int
    converged: bool


def fit(p: Panels, *, tol: float, max_iter: int, min_noise: float | None) -> PanelFit:
    """``dawid_skene.bias_noise``'s fit on panels: the same start, iteration and stopping rule."""
    n_graders, total = p.graders.size, p.judgments
    if not all(np.isfinite(v).all() for v in p.values):
        raise ValueError("`judgments` values must be finite numbers")
    per_grader = np.zeros(n_graders, dtype=np.int64)
    for m, v in zip(p.members, p.values, strict=True):
        per_grader[m] += v.shape[1]
    mean = _sum(v.sum() for v in p.values) / total
    spread = float(np.sqrt(_squares(p.values, [mean] * len(p.values)) / total))
    floor = float(min_noise) if min_noise is not None else (0.01 * spread if spread > 0 else 1e-6)
    score = [v.sum(axis=0) / v.shape[0] for v in p.values]  # each unit's mean
    start = _squares(p.values, score) / total
    bias, var = np.zeros(n_graders), np.full(n_graders, max(start, floor**2))
    converged, iterations = False, 0
    while iterations < max_iter:
        new, off, squares, shares = _iteration(p, var, bias)
        bias = off / per_grader
        squares -= bias * off  # Σ (r − b_g)² = Σ r² − b_g Σ r for b_g = Σ r / n_g, as the rows' fit
        shift = bias.mean()
        bias = bias - shift
        for t in new:
            t += shift
        free = per_grader - shares / var  # Σ_u (1 − h_gu), h_gu = w_g / Σ_{g' on u} w_g'
        new_var = np.maximum(squares / np.maximum(free, 1e-9), floor**2)
        change = max(
            max(float(np.abs(t - s).max()) for t, s in zip(new, score, strict=True)),
            float(np.abs(np.sqrt(new_var) - np.sqrt(var)).max()),
        )
        score, var, iterations = new, new_var, iterations + 1
        if change < tol:
            converged = True
            break
    log_var = np.log(2 * np.pi * var)
    log_likelihood = -0.5 * _sum(
        _sum(v.shape[1] * log_var[g] + ((v[j] - t - bias[g]) ** 2).sum() / var[g] for j, g in enumerate(m))
        for m, v, t in zip(p.members, p.values, score, strict=True)
    )
    out, out_se = np.empty(p.units.size), np.empty(p.units.size)
    for m, rows, t in zip(p.members, p.rows, score, strict=True):
        out[rows] = t
        out_se[rows] = 1.0 / np.sqrt((1.0 / var[m]).sum())
    return PanelFit(out, out_se, bias, var, per_grader, float(log_likelihood), iterations, converged)


def _iteration(
    p: Panels, var: np.ndarray, bias: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """Each panel's scores t_u = Σ_g w_g (y_gu − b_g) / Σ_g w_g, and per grader Σ r, Σ r² and
    Σ 1/W_u over their judgments, r = y − t_u."""
    n_graders = p.graders.size
    off, squares, shares = np.zeros(n_graders), np.zeros(n_graders), np.zeros(n_graders)
    inverse = 1.0 / var
    scores = []
    for m, v in zip(p.members, p.values, strict=True):
        w = inverse[m]
        weight = w.sum()
        t = v[0] * w[0]
        for j in range(1, m.size):
            t += v[j] * w[j]
        t -= float((w * bias[m]).sum())
        t /= weight
        for j, g in enumerate(m):
            r = v[j] - t
            off[g] += r.sum()
            r *= r
            squares[g] += r.sum()
        shares[m] += v.shape[1] / weight
        scores.append(t)
    return scores, off, squares, shares


def _squares(values: list[np.ndarray], centres: list[Any]) -> float:
    """Σ (y − centre)² over every judgment, a panel's grader at a time (no temporary of a whole panel)."""
    return _sum(((row - centre) ** 2).sum() for v, centre in zip(values, centres, strict=True) for row in v)


def _sum(terms: Iterable[Any]) -> float:
    """The terms added in order (a Python float: the same order, the same bits)."""
    total = 0.0
    for term in terms:
        total += float(term)
    return total
