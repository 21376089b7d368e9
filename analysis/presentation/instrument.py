"""The instrument card (docs/design.md §5.5): precision, repeatability, and where linked,
reproducibility and resolution, as tables and a plot from the stored result."""

from __future__ import annotations

from typing import Any

from django.utils.safestring import SafeString

from analysis import plots
from analysis.presentation.table import Table


def card_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    precision = (result.get("confusability") or {}).get("precision") or {}
    alpha = (result.get("agreement") or {}).get("alpha") or {}
    band = precision.get("band_67") or [None, None]
    rows = [
        {"what": "Precision: mean per-unit std", "value": precision.get("mean_std"), "low": None, "high": None},
        {"what": "Precision: middle 67% of per-unit std", "value": None, "low": band[0], "high": band[1]},
        {
            "what": f"Repeatability: α ({alpha.get('scale', '')})",
            "value": alpha.get("value"),
            "low": alpha.get("ci_low"),
            "high": alpha.get("ci_high"),
        },
    ]
    linked = result.get("instrument") or {}
    repro = linked.get("reproducibility") or {}
    if "spearman_means" in repro:
        rows += [
            {
                "what": f"Reproducibility vs {repro['sibling']}: Spearman of unit means ({repro['n_units']} units)",
                "value": repro["spearman_means"],
            },
            {"what": "Reproducibility: Pearson of unit stds", "value": repro["pearson_stds"]},
            {"what": f"α of {repro['sibling']}", "value": repro["alpha_second"]},
        ]
    res = linked.get("resolution") or {}
    if "resolution" in res:
        rows.append({"what": f"Resolution from {res['pairwise']} ({res['n_pairs']} pairs)", "value": res["resolution"]})
    return rows


def _notes(result: dict[str, Any]) -> str:
    linked = result.get("instrument") or {}
    notes = []
    for key, name in (("reproducibility", "Reproducibility"), ("resolution", "Resolution")):
        part = linked.get(key)
        if part is None:
            notes.append(f"{name}: link a {'sibling' if key == 'reproducibility' else 'pairwise'} campaign below.")
        elif part.get("reason"):
            notes.append(f"{name}: {part['reason']}.")
    return " ".join(notes)


def instrument_tables(result: dict[str, Any]) -> dict[str, Table]:
    if "instrument" not in result:
        return {}
    tables = {
        "instrument": Table(
            "The campaign as an instrument",
            [("what", "Figure"), ("value", "Value"), ("low", "from"), ("high", "to")],
            card_rows(result),
            note=_notes(result),
            explain={"value": "interval", "low": "band67"},
        )
    }
    repro = (result.get("instrument") or {}).get("reproducibility") or {}
    if repro.get("moved_mean"):
        tables["instrument_moved"] = Table(
            f"Units whose mean moved most between this campaign and {repro['sibling']}",
            [("unit", "Unit"), ("first", "Mean here"), ("second", "Mean there"), ("change", "Change")],
            repro["moved_mean"],
        )
    return tables


def instrument_plots(result: dict[str, Any]) -> dict[str, SafeString]:
    out = {}
    conf = result.get("confusability") or {}
    if "instrument" in result and conf.get("crescent"):
        scale = ((result.get("agreement") or {}).get("alpha") or {}).get("scale", "score")
        out["instrument_crescent"] = plots.crescent(
            conf["crescent"], title="Precision: std against mean (the crescent)", xlabel=f"mean {scale}"
        )
    res = (result.get("instrument") or {}).get("resolution") or {}
    curve = [p for p in res.get("curve", []) if p.get("agreement") is not None]
    if not curve:
        return out
    return {
        **out,
        "resolution": plots.bars(
            [f"{p['threshold']:g}" for p in curve],
            [100 * p["agreement"] for p in curve],
            title="Agreement with the pairwise verdicts by difference in means",
            ylabel="% of pairs agreeing",
        ),
    }
