"""Server-rendered SVG plots for the report pages: no JavaScript, no matplotlib.

Every plot is an ``<svg role="img">`` with a ``<title>`` and a ``<desc>`` (the alt text, which says
what the plot shows in words), sized by its viewBox so it scales with the page.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from html import escape

from django.utils.safestring import SafeString, mark_safe

W, H = 640, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 28, 44
COLORS = ["#3465a4", "#cc0000", "#4e9a06", "#c17d11", "#75507b", "#2e3436"]
_ids = itertools.count(1)


def nice_step(span: float, n: int = 5, *, integer: bool = False) -> float:
    """A round tick step (1, 2, 2.5 or 5 × 10^k) giving about ``n`` ticks over ``span``."""
    raw = span / max(n - 1, 1)
    if not (math.isfinite(raw) and raw > 0):
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    multiples = (1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)  # whole numbers on a count axis
    step = min((m * power for m in multiples), key=lambda c: abs(math.log(c / raw)))
    return max(step, 1.0) if integer else step


def _decimals(step: float) -> int:
    """Digits after the point that show every multiple of ``step`` exactly (0.25 → 2, 0.2 → 1, 5 → 0)."""
    for d in range(0, 12):
        if abs(step * 10**d - round(step * 10**d)) < 1e-6 * step * 10**d:
            return d
    return 12


class _Scale:
    """A linear map from data to SVG coordinates, with ticks at round numbers.

    ``nice`` widens the domain to whole tick steps (axes starting at 0 end on a labelled tick);
    without it the ticks are the round numbers inside the data's range.
    """

    def __init__(
        self,
        lo: float,
        hi: float,
        out_lo: float,
        out_hi: float,
        *,
        nice: bool = False,
        integer: bool = False,
        n: int = 5,
    ) -> None:
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
            lo, hi = (lo - 0.5, lo + 0.5) if math.isfinite(lo) else (0.0, 1.0)
        self.step = nice_step(hi - lo, n, integer=integer)
        if nice:
            lo, hi = math.floor(lo / self.step + 1e-9) * self.step, math.ceil(hi / self.step - 1e-9) * self.step
            if hi <= lo:  # a range far below one step (e.g. all counts 0 but one tiny value)
                hi = lo + self.step
        self.lo, self.hi, self.out_lo, self.out_hi = lo, hi, out_lo, out_hi

    def __call__(self, v: float) -> float:
        return self.out_lo + (v - self.lo) / (self.hi - self.lo) * (self.out_hi - self.out_lo)

    def ticks(self) -> list[float]:
        """Multiples of the step within the domain, rounded so that no float noise (2.78e-17) shows."""
        first, last = math.ceil(self.lo / self.step - 1e-9), math.floor(self.hi / self.step + 1e-9)
        return [float(f"{i * self.step:.12g}") + 0.0 for i in range(first, last + 1)]

    def label(self, v: float) -> str:
        """A tick label with just the digits the step needs: 0, 0.2, 0.25, 1,000."""
        if not 1e-6 <= self.step < 1e15:
            return f"{v:.3g}"
        text = f"{v:,.{_decimals(self.step)}f}"
        text = text.rstrip("0").rstrip(".") if "." in text else text
        return "0" if text in ("-0", "") else text


def _fmt(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"


def _frame(title: str, alt: str, body: list[str], *, css: str = "plot") -> SafeString:
    n = next(_ids)
    head = (
        f'<svg class="{css}" viewBox="0 0 {W} {H}" role="img" aria-labelledby="plot{n}-t plot{n}-d" '
        f'xmlns="http://www.w3.org/2000/svg"><title id="plot{n}-t">{escape(title)}</title>'
        f'<desc id="plot{n}-d">{escape(alt)}</desc>'
        f'<text x="{W / 2}" y="16" text-anchor="middle" class="plot-title">{escape(title)}</text>'
    )
    if not body:  # say so on the plot too, not only in the alt text
        body = [f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" class="label">Nothing to plot yet.</text>']
    return mark_safe(head + "".join(body) + "</svg>")  # noqa: S308 - every text was escaped above


def _axes(x: _Scale, y: _Scale, xlabel: str, ylabel: str, *, x_ticks: bool = True) -> list[str]:
    out = [
        f'<line x1="{LEFT}" y1="{H - BOTTOM}" x2="{W - RIGHT}" y2="{H - BOTTOM}" class="axis"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{H - BOTTOM}" class="axis"/>',
    ]
    for t in y.ticks():
        out.append(f'<text x="{LEFT - 6}" y="{y(t) + 4:.1f}" text-anchor="end" class="tick">{y.label(t)}</text>')
    if x_ticks:
        for t in x.ticks():
            out.append(
                f'<text x="{x(t):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle" class="tick">{x.label(t)}</text>'
            )
    out.append(
        f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 8}" text-anchor="middle" class="label">{escape(xlabel)}</text>'
    )
    out.append(
        f'<text transform="translate(14 {(TOP + H - BOTTOM) / 2}) rotate(-90)" text-anchor="middle" '
        f'class="label">{escape(ylabel)}</text>'
    )
    return out


def histogram(edges: Sequence[float], counts: Sequence[int], *, title: str, xlabel: str) -> SafeString:
    if not counts:
        return _frame(title, f"{title}: no data.", [])
    x = _Scale(edges[0], edges[-1], LEFT, W - RIGHT)
    y = _Scale(0, max(max(counts), 1), H - BOTTOM, TOP, nice=True, integer=True)
    bars = [
        f'<rect x="{x(a):.1f}" y="{y(c):.1f}" width="{max(0.5, x(b) - x(a) - 1):.1f}" '
        f'height="{y(0) - y(c):.1f}" class="bar"><title>{_fmt(a)}–{_fmt(b)}: {c}</title></rect>'
        for a, b, c in zip(edges[:-1], edges[1:], counts, strict=True)
    ]
    peak = max(range(len(counts)), key=lambda i: counts[i])
    alt = (
        f"Histogram of {xlabel} over {sum(counts)} units, from {_fmt(edges[0])} to {_fmt(edges[-1])}; "
        f"the most common range is {_fmt(edges[peak])}–{_fmt(edges[peak + 1])} ({counts[peak]} units)."
    )
    return _frame(title, alt, _axes(x, y, xlabel, "units") + bars)


def bars(
    labels: Sequence[str],
    values: Sequence[float],
    *,
    title: str,
    ylabel: str,
    series: Sequence[str] | None = None,
    groups: Sequence[Sequence[float]] | None = None,
) -> SafeString:
    """Vertical bars, one per label; with ``groups`` (one value list per series) grouped bars."""
    groups = [list(values)] if groups is None else [list(g) for g in groups]
    series = list(series or [ylabel])
    flat = [v for g in groups for v in g if v is not None and math.isfinite(v)]
    if not labels or not flat:
        return _frame(title, f"{title}: no data.", [])
    counts = all(float(v).is_integer() for v in flat)
    y = _Scale(min(0.0, min(flat)), max(max(flat), 1e-9), H - BOTTOM, TOP, nice=True, integer=counts)
    slot = (W - LEFT - RIGHT) / len(labels)
    width = slot * 0.8 / len(groups)
    out = _axes(_Scale(0, 1, LEFT, W - RIGHT), y, "", ylabel, x_ticks=False)
    for i, label in enumerate(labels):
        out.append(
            f'<text x="{LEFT + slot * (i + 0.5):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle" '
            f'class="tick">{escape(str(label))[:14]}</text>'
        )
        for j, group in enumerate(groups):
            v = group[i]
            if v is None or not math.isfinite(v):
                continue
            x0 = LEFT + slot * i + slot * 0.1 + j * width
            top, bottom = sorted((y(v), y(0)))
            out.append(
                f'<rect x="{x0:.1f}" y="{top:.1f}" width="{width:.1f}" height="{max(bottom - top, 0.5):.1f}" '
                f'fill="{COLORS[j % len(COLORS)]}"><title>{escape(str(label))} {escape(series[j])}: '
                f"{_fmt(v)}</title></rect>"
            )
    if len(groups) > 1:
        out += _legend(series)
    legend = ", ".join(series) if len(series) > 1 else ylabel
    alt = (
        f"Bar chart of {legend} for {len(labels)} items: "
        + "; ".join(
            f"{label} {', '.join(_fmt(g[i]) for g in groups if g[i] is not None and math.isfinite(g[i]))}"
            for i, label in enumerate(labels[:12])
        )
        + ("…" if len(labels) > 12 else ".")
    )
    return _frame(title, alt, out)


def _legend(series: Sequence[str]) -> list[str]:
    """Colour swatches with the series' names, in one row centred under the plot."""
    widths = [22 + 7 * len(str(name)) for name in series]
    x = (W - sum(widths)) / 2
    out = ['<g class="legend" aria-hidden="true">']
    for j, (name, width) in enumerate(zip(series, widths, strict=True)):
        out.append(
            f'<rect x="{x:.1f}" y="{H - 18}" width="11" height="11" fill="{COLORS[j % len(COLORS)]}"/>'
            f'<text x="{x + 15:.1f}" y="{H - 8}" class="tick">{escape(str(name))}</text>'
        )
        x += width
    return [*out, "</g>"]


def intervals(
    rows: Sequence[tuple[str, float | None, float | None, float | None]],
    *,
    title: str,
    xlabel: str,
    domain: tuple[float, float] = (-0.2, 1.0),
    confidence: float = 0.95,
) -> SafeString:
    """A forest plot: one estimate per row with its interval, on ``domain`` (default for kappa, alpha)."""
    rows = [r for r in rows if r[1] is not None]
    if not rows:
        return _frame(title, f"{title}: nothing could be estimated.", [])
    x = _Scale(domain[0], domain[1], LEFT + 90, W - RIGHT, n=7)
    step = (H - TOP - BOTTOM) / len(rows)
    out = [f'<line x1="{x(0):.1f}" y1="{TOP}" x2="{x(0):.1f}" y2="{H - BOTTOM}" class="grid"/>']
    for t in x.ticks():
        out.append(f'<text x="{x(t):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle" class="tick">{x.label(t)}</text>')
    for i, (name, value, lo, hi) in enumerate(rows):
        cy = TOP + step * (i + 0.5)
        out.append(f'<text x="{LEFT + 84}" y="{cy + 4:.1f}" text-anchor="end" class="tick">{escape(name)}</text>')
        if lo is not None and hi is not None:
            out.append(
                f'<line x1="{x(max(lo, domain[0])):.1f}" y1="{cy:.1f}" x2="{x(hi):.1f}" y2="{cy:.1f}" class="ci"/>'
            )
        out.append(f'<circle cx="{x(max(value, domain[0])):.1f}" cy="{cy:.1f}" r="5" class="point"/>')
    out.append(f'<text x="{(LEFT + W) / 2}" y="{H - 8}" text-anchor="middle" class="label">{escape(xlabel)}</text>')
    alt = (
        f"Estimates with {confidence:.0%} intervals: "
        + "; ".join(
            f"{n} {_fmt(v)}" + (f" ({_fmt(lo)} to {_fmt(hi)})" if lo is not None and hi is not None else "")
            for n, v, lo, hi in rows
        )
        + "."
    )
    return _frame(title, alt, out)


def crescent(data: dict, *, title: str, xlabel: str) -> SafeString:
    """Per-unit std against mean: points for few units, a shaded count grid for many."""
    if data.get("kind") == "grid":
        return _crescent_grid(data, title=title, xlabel=xlabel)
    points = [(m, s) for m, s in data.get("points", []) if m is not None and s is not None]
    if not points:
        return _frame(title, f"{title}: no unit has two judgments yet.", [])
    x = _Scale(min(p[0] for p in points), max(p[0] for p in points), LEFT, W - RIGHT, nice=True)
    y = _Scale(0, max(max(p[1] for p in points), 1e-9), H - BOTTOM, TOP, nice=True)
    dots = [f'<circle cx="{x(m):.1f}" cy="{y(s):.1f}" r="3" class="dot"/>' for m, s in points]
    mid = [s for m, s in points if x.lo + (x.hi - x.lo) / 3 <= m <= x.hi - (x.hi - x.lo) / 3]
    edge = [s for m, s in points if not x.lo + (x.hi - x.lo) / 3 <= m <= x.hi - (x.hi - x.lo) / 3]
    alt = f"Scatter of {len(points)} units, standard deviation of their judgments against their mean. " + (
        f"Units in the middle third of the scale average std {_fmt(sum(mid) / len(mid))}, units near "
        f"the ends {_fmt(sum(edge) / len(edge))}."
        if mid and edge
        else ""
    )
    return _frame(title, alt, _axes(x, y, xlabel, "std of judgments") + dots)


def _crescent_grid(data: dict, *, title: str, xlabel: str) -> SafeString:
    xe, ye, counts = data["x_edges"], data["y_edges"], data["counts"]
    x = _Scale(xe[0], xe[-1], LEFT, W - RIGHT)
    y = _Scale(ye[0], ye[-1], H - BOTTOM, TOP)
    top = max(max(row) for row in counts) or 1
    cells = []
    for i, row in enumerate(counts):
        for j, c in enumerate(row):
            if c:
                shade = 0.15 + 0.85 * math.log1p(c) / math.log1p(top)
                cells.append(
                    f'<rect x="{x(xe[i]):.1f}" y="{y(ye[j + 1]):.1f}" width="{x(xe[i + 1]) - x(xe[i]):.1f}" '
                    f'height="{y(ye[j]) - y(ye[j + 1]):.1f}" fill="#3465a4" fill-opacity="{shade:.2f}"/>'
                )
    alt = (
        f"Density of {data.get('n', 0)} units by the mean (horizontal) and standard deviation (vertical) of "
        "their judgments; darker cells hold more units."
    )
    return _frame(title, alt, _axes(x, y, xlabel, "std of judgments") + cells)


def boxes(rows: Sequence[dict], *, title: str, ylabel: str) -> SafeString:
    """One box per row (keys: name, min, q1, median, q3, max, n)."""
    rows = [r for r in rows if r.get("n") and r.get("median") is not None]
    if not rows:
        return _frame(title, f"{title}: no data.", [])
    y = _Scale(min(r["min"] for r in rows), max(r["max"] for r in rows), H - BOTTOM, TOP, nice=True)
    slot = (W - LEFT - RIGHT) / len(rows)
    out = _axes(_Scale(0, 1, LEFT, W - RIGHT), y, "", ylabel, x_ticks=False)
    for i, r in enumerate(rows):
        cx, half = LEFT + slot * (i + 0.5), slot * 0.2
        q1, q3 = r.get("q1", r["median"]), r.get("q3", r["median"])
        out += [
            f'<line x1="{cx:.1f}" y1="{y(r["min"]):.1f}" x2="{cx:.1f}" y2="{y(r["max"]):.1f}" class="whisker"/>',
            f'<rect x="{cx - half:.1f}" y="{y(q3):.1f}" width="{2 * half:.1f}" height="{max(y(q1) - y(q3), 1):.1f}" '
            f'class="box"/>',
            f'<line x1="{cx - half:.1f}" y1="{y(r["median"]):.1f}" x2="{cx + half:.1f}" y2="{y(r["median"]):.1f}" '
            f'class="median"/>',
            f'<text x="{cx:.1f}" y="{H - BOTTOM + 16}" text-anchor="middle" class="tick">{escape(str(r["name"]))} '
            f"(n={r['n']})</text>",
        ]
    alt = (
        f"Box plots of {ylabel}: "
        + "; ".join(
            f"{r['name']} median {_fmt(r['median'])}, quartiles {_fmt(r.get('q1', r['median']))}–"
            f"{_fmt(r.get('q3', r['median']))}, range {_fmt(r['min'])}–{_fmt(r['max'])}"
            for r in rows
        )
        + "."
    )
    return _frame(title, alt, out)
