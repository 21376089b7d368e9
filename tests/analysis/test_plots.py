"""The report's SVG plots: tick labels at round numbers, never float noise; a legend for grouped bars."""

from __future__ import annotations

import re

import pytest

from analysis import plots

CLEAN = re.compile(r"^-?\d{1,3}(,\d{3})*(\.\d{1,4})?$")


def tick_labels(svg: str) -> list[str]:
    return re.findall(r'class="tick">([^<]*)</text>', svg)


@pytest.mark.parametrize(
    "svg",
    [
        plots.bars(["a", "b", "c"], [0.1, 0.2, 0.30000000000000004], title="t", ylabel="y"),
        plots.bars(["a", "b"], [1.754, 0.7359], title="ED", ylabel="ED"),
        plots.bars(["a", "b"], [-0.97, 0.94], title="t", ylabel="y"),
        plots.histogram([0.0, 0.396, 0.792, 1.19, 1.585], [1, 0, 2, 31], title="t", xlabel="entropy"),
        plots.intervals([("κ", 0.18, -2.78e-17, 0.35)], title="t", xlabel="kappa"),
        plots.crescent({"kind": "points", "points": [[0.1, 0.0], [4.4, 4.1], [8.8, 1.03]]}, title="t", xlabel="mean"),
        plots.boxes(
            [{"name": "NS", "n": 3, "min": 0, "q1": 0.9, "median": 1.9, "q3": 2.9, "max": 7.2}],
            title="t",
            ylabel="FINE",
        ),
    ],
    ids=["tenths", "ed", "negative", "histogram", "intervals", "crescent", "boxes"],
)
def test_tick_labels_are_round_numbers(svg):
    labels = tick_labels(svg)
    numeric = [label for label in labels if re.match(r"^[-\d]", label)]
    assert len(numeric) >= 3
    assert all(CLEAN.match(label) for label in numeric), numeric
    assert "e-" not in svg.split("<desc")[0] and "-0<" not in svg


def test_ticks_are_evenly_spaced_multiples_of_a_round_step():
    scale = plots._Scale(0, 13, 0, 1, nice=True, integer=True)
    assert scale.ticks() == [0, 5, 10, 15] and scale.hi == 15
    kappa = plots._Scale(-0.2, 1.0, 0, 1, n=7)
    assert [kappa.label(t) for t in kappa.ticks()] == ["-0.2", "0", "0.2", "0.4", "0.6", "0.8", "1"]
    assert plots._Scale(0, 250_000, 0, 1, nice=True).label(100_000) == "100,000"


def test_counts_get_whole_number_ticks():
    labels = tick_labels(plots.bars(["g1", "g2"], [1, 3], title="t", ylabel="judgments"))
    assert [x for x in labels if x[0].isdigit()] == ["0", "1", "2", "3"]


def test_grouped_bars_have_a_legend_naming_each_colour():
    svg = plots.bars(
        ["G01", "G02"],
        [],
        title="usage",
        ylabel="judgments",
        series=["NS", "SS", "VS"],
        groups=[[3, 12], [13, 9], [3, 1]],
    )
    legend = svg[svg.index('<g class="legend"') :]
    assert len(plots.COLORS) >= 3
    for colour, name in zip(plots.COLORS[:3], ["NS", "SS", "VS"], strict=True):
        assert f'fill="{colour}"/><text' in legend and f">{name}</text>" in legend


def test_an_empty_plot_says_so():
    assert "Nothing to plot yet." in plots.bars([], [], title="t", ylabel="y")


@pytest.mark.parametrize("values", [[0, 0], [0, 1e-12], [5, 5]])
def test_a_degenerate_range_still_draws(values):
    svg = plots.bars(["a", "b"], values, title="t", ylabel="y")
    assert "<svg" in svg and "nan" not in svg
