"""The latest analysis of several campaigns at a glance (the home page), in two queries whatever
the number of campaigns: the latest succeeded run's agreement, and the latest run's status."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, Subquery

from analysis.metrics.agreement import landis_koch
from analysis.models import AnalysisRun, RunStatus
from analysis.presentation.summary import ordering_agreement
from grading.models import Campaign


def runs_headline(*, campaign_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Per campaign: `agreement` (statistic, value, interval, label, run number) or None, and
    `failed` (the latest run's error when it failed)."""
    if not campaign_ids:
        return {}
    runs = AnalysisRun.objects.filter(campaign=OuterRef("pk"))
    rows = (
        Campaign.objects.filter(pk__in=campaign_ids)
        .annotate(
            good_id=Subquery(runs.filter(status=RunStatus.SUCCEEDED).order_by("-finished_at", "-id").values("id")[:1]),
            last_id=Subquery(runs.order_by("-created_at", "-id").values("id")[:1]),
        )
        .values_list("pk", "good_id", "last_id")
    )
    ids = {pk: (good, last) for pk, good, last in rows}
    wanted = {i for pair in ids.values() for i in pair if i}
    found = {
        r["id"]: r
        for r in AnalysisRun.objects.filter(pk__in=wanted).values(
            "id", "number", "status", "error", "finished_at", "result__agreement", "result__orderings__queries"
        )
    }
    out: dict[int, dict[str, Any]] = {}
    for pk, (good, last) in ids.items():
        last_run = found.get(last) or {}
        out[pk] = {
            "agreement": _headline(found[good]) if good in found else None,
            "failed": last_run.get("error") or "failed" if last_run.get("status") == RunStatus.FAILED else "",
            "failed_number": last_run.get("number"),
        }
    return out


def _headline(run: dict[str, Any]) -> dict[str, Any]:
    agreement = run.get("result__agreement") or {}
    levels = agreement.get("levels") or []
    if levels and (levels[0].get("kappa") or {}).get("value") is not None:
        est, name = levels[0]["kappa"], f"Fleiss' κ ({levels[0].get('name', '')})"
    elif (agreement.get("alpha") or {}).get("value") is not None:
        est, name = agreement["alpha"], "Krippendorff's α"
    elif (ordered := ordering_agreement({"queries": run.get("result__orderings__queries") or []})) is not None:
        return {"ordering": True, "run": run.get("number") or run["id"], **ordered}
    else:
        first = (levels[0].get("kappa") if levels else agreement.get("alpha")) or {}
        return {
            "undefined": True,
            "run": run.get("number") or run["id"],
            "reason": first.get("reason")
            or (
                "no query has two orderings or more yet"
                if run.get("result__orderings__queries")
                else "too few units with two or more judgments"
            ),
        }
    return {
        "statistic": name,
        "value": est["value"],
        "ci_low": est.get("ci_low"),
        "ci_high": est.get("ci_high"),
        "label": landis_koch(est["value"]),
        "run": run.get("number") or run["id"],
        "confidence": agreement.get("confidence", 0.95),
    }
