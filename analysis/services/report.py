"""The campaign report: load the campaign from the database, run the metrics stage by stage.

``report_compute`` returns the JSON result stored on the AnalysisRun and the per-unit table stored
as blocks of units (``unit_blocks``). Each stage reports its name and progress (which also heartbeats the run).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import pandas as pd

from analysis import metrics as m
from analysis import selectors
from analysis.reports.serialize import jsonable
from analysis.services import auto_exclusion
from analysis.services.judgments import Judgments, StoredJudgments
from analysis.services.sections.accounting import accounting
from analysis.services.sections.agreement import agreement_report
from analysis.services.sections.behaviour import Behaviour, stability
from analysis.services.sections.graders_queries import graders, queries
from analysis.services.sections.hidden_units import hidden_units_section
from analysis.services.sections.instrument import instrument_section
from analysis.services.sections.model import model_truth
from analysis.services.sections.ordering import orderings
from analysis.services.sections.systems import systems_section
from analysis.services.shards import ShardPart, parts_behaviour, shard_compute
from analysis.services.slice_memo import SliceMemo
from analysis.services.values import ValueSpec, heap_release, value_spec
from grading.models import Campaign
from grading.models.choices import Scheme

RESULT_SCHEMA = 1
DEFAULT_TOLERANCE = 0.05  # FINE values this close count as equal (the runs' fine_tolerance default)


class ProgressSink(Protocol):
    def stage(self, name: str, percent: int) -> None: ...


class _NoProgress:
    def stage(self, name: str, percent: int) -> None:
        return None


@dataclass
class CampaignData:
    """A campaign's data as the sections read it. ``judgments`` are read a slice of whole units at a
    time (``analysis.services.judgments``), each slice with the value columns ``cat`` and ``num``;
    ``behaviour`` is what stability and engagement need of the event log
    (``sections.behaviour.Behaviour``)."""

    campaign_id: int
    scheme: str
    spec: ValueSpec
    judgments: Judgments
    behaviour: Behaviour
    orderings: pd.DataFrame
    pseudonyms: dict[int, str]
    query_labels: dict[int, str]
    excluded: list[dict[str, Any]] = field(default_factory=list)

    @property
    def client_ts_replaced(self) -> int:
        return self.behaviour.client_ts_replaced

    def without_excluded(self) -> CampaignData:
        """The data less the graders excluded since it was loaded (as loading it again would give)."""
        excluded = selectors.excluded_graders(campaign_id=self.campaign_id)
        out = {e["grader"] for e in excluded}
        return replace(
            self,
            judgments=self.judgments.without(out),
            behaviour=self.behaviour.without(out),
            orderings=selectors.without_graders(self.orderings, out),
            excluded=excluded,
        )


@dataclass(frozen=True)
class ModelFitted:
    """The model's section and per-unit columns (``sections.model.model_truth``), and the accounting
    that reads the section, as another worker computed them (``execute``'s model beside the
    combining step); ``excluded`` and ``pseudonyms`` say from which data (``data_mark``)."""

    model: dict[str, Any]
    units: pd.DataFrame
    accounting: dict[str, Any]
    excluded: list[int]
    pseudonyms: str


ModelFrom = Callable[[], ModelFitted | None]


def data_mark(data: CampaignData) -> tuple[list[int], str]:
    """What the model's data depends on beyond the parts: the graders left out, and a digest of the
    graders' pseudonyms (the section names them)."""
    named = json.dumps(sorted(data.pseudonyms.items()), ensure_ascii=False).encode()
    return sorted(e["grader"] for e in data.excluded), hashlib.sha256(named).hexdigest()


def model_side_compute(
    *, campaign_id: int, parameters: dict[str, Any], parts: list[ShardPart], log: selectors.EventLog | None
) -> ModelFitted:
    """The model and the accounting of a run's parts, as ``report_compute`` computes them when no
    reliability threshold fitted the model first, for the combining step to take (``ModelFrom``)."""
    data = campaign_data_load(campaign_id=campaign_id, tolerance=float(parameters["fine_tolerance"]), parts=parts)
    model, units = model_truth(data.judgments, data.spec, data.pseudonyms)
    excluded, pseudonyms = data_mark(data)
    heap_release()
    return ModelFitted(
        model=model,
        units=units,
        accounting=_accounting(campaign_id, model, log),
        excluded=excluded,
        pseudonyms=pseudonyms,
    )


def _accounting(campaign_id: int, model: dict[str, Any], log: selectors.EventLog | None) -> dict[str, Any]:
    """The accounting section (§5.6) of the fitted ``model``, the campaign's valued judgments as the
    run counted them when it planned (``log``; None: counted here)."""
    return accounting(campaign_id=campaign_id, model=model, valued=log.valued if log is not None else None)


def campaign_data_load(
    *, campaign_id: int, tolerance: float = DEFAULT_TOLERANCE, parts: list[ShardPart] | None = None
) -> CampaignData:
    """The campaign's data as every section reads it: from the shards' ``parts`` when a run was
    split (``analysis.services.shards``), else read here as one shard of every grader.

    The one place that decides whose work counts: excluded graders (``selectors.excluded_graders``:
    by an organizer, or automatically by a threshold) are left out of the judgments, the events and
    the orderings here, so that ground truth, agreement, stability and the model are computed as if
    their judgments were absent (the event log keeps them). A grader excluded after the shards read
    their work is left out here all the same."""
    campaign = Campaign.objects.get(pk=campaign_id)
    spec = value_spec(campaign)
    excluded = selectors.excluded_graders(campaign_id=campaign_id)
    out = {e["grader"] for e in excluded}
    if parts is None:
        parts = [shard_compute(campaign_id=campaign_id, span=(None, None), excluded=out, tolerance=tolerance)]
    # The parts' judgments stay as they came (Parquet from the workers): each section reads them a
    # slice of whole units at a time, so that no step holds every judgment (docs/analysis.md).
    return CampaignData(
        campaign_id=campaign_id,
        scheme=campaign.scheme,
        spec=spec,
        judgments=StoredJudgments(parts, spec, excluded=out),
        behaviour=parts_behaviour(parts).without(out),
        orderings=selectors.without_graders(selectors.orderings_frame(campaign_id=campaign_id), out),
        pseudonyms=selectors.grader_pseudonyms(campaign_id=campaign_id),
        query_labels=selectors.query_labels(campaign_id=campaign_id),
        excluded=excluded,
    )


def exclusions_before_reading(*, campaign_id: int) -> None:
    """The automatic exclusion by gold accuracy (``auto_exclusion``), applied before any shard reads
    a judgment: it needs only the gold answers, and whoever it excludes is left out of everything."""
    campaign = Campaign.objects.get(pk=campaign_id)
    auto_exclusion.gold_exclusions_apply(campaign=campaign, thresholds=auto_exclusion.thresholds_of(campaign))


def _data_after_thresholds(
    campaign_id: int, tolerance: float, parts: list[ShardPart] | None
) -> tuple[CampaignData, tuple[dict[str, Any], pd.DataFrame] | None]:
    """The campaign's data once the automatic thresholds (``auto_exclusion``) have had their say, and
    the model fitted to it when the reliability check fitted one that still holds (None: fit later).

    Gold accuracy is checked before reading (``exclusions_before_reading``; here too when no shard
    did it). Reliability needs a fit: a grader below it is excluded and left out of the data, so
    that every figure of the run leaves them out (the report's model is then fitted again, without
    them)."""
    if parts is None:
        exclusions_before_reading(campaign_id=campaign_id)
        parts = [shard_compute(campaign_id=campaign_id, span=(None, None), excluded=set(), tolerance=tolerance)]
    campaign = Campaign.objects.get(pk=campaign_id)
    thresholds = auto_exclusion.thresholds_of(campaign)
    data = campaign_data_load(campaign_id=campaign_id, tolerance=tolerance, parts=parts)
    if thresholds.reliability_below is None:
        return data, None
    fitted = model_truth(data.judgments, data.spec, data.pseudonyms)
    if auto_exclusion.reliability_exclusions_apply(campaign=campaign, thresholds=thresholds, model=fitted[0]):
        return data.without_excluded(), None
    return data, fitted


def report_compute(
    *,
    campaign_id: int,
    parameters: dict[str, Any],
    seed: int,
    progress: ProgressSink | None = None,
    parts: list[ShardPart] | None = None,
    log: selectors.EventLog | None = None,
    units_ready: Callable[[pd.DataFrame], None] | None = None,
    model_ready: Callable[[pd.DataFrame], None] | None = None,
    kept: m.KeptSums | None = None,
    memo: SliceMemo | None = None,
    model_from: ModelFrom | None = None,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Every section of the campaign report (docs/design.md §5) and the per-unit results.

    Parameters
    ----------
    parts : the shards' parts of a run split into shards (``analysis.services.shards``), in the
        order of their spans; None reads the campaign here, as one shard.
    parameters : cleaned run parameters (n_boot, confidence, fine_tolerance).
    log : the event log and judgments as the run counted them when it planned its shards, for the
        overview and the accounting (None: counted here).
    seed : seeds the agreement sections (``sections.agreement.agreement_report``, the rule the ``agreement``
        command shares) and, separately, the generator of the orderings section.
    units_ready : called with the per-unit table as soon as its units' own figures are final (after
        the agreement sections), so that the caller can begin to store them meanwhile (``execute``);
        nothing changes those columns after the call.
    model_ready : called with the per-unit table once the model's columns joined it, before the
        sections that only read it (the caller stores those columns then); nothing changes the
        table after the call. Not called when the model has no per-unit column.
    kept : the bootstrap's blocks of the run before, lent to the agreement section, which keeps this
        run's there (``metrics.KeptSums``); the figures are the same with it or without it.
    memo : the sections' sums of the slices the run before read (``slice_memo``, kept in ``kept``'s
        store), lent to the sections that keep sums per slice, which keep this run's there; the
        figures are the same with it or without it.
    model_from : the model and the accounting computed by another worker from the same parts
        (``model_side_compute``), asked for when the model is due and taken when it came from the same
        data (``data_mark``); None, or nothing given, fits the model here.
    """
    progress = progress or _NoProgress()
    progress.stage("loading judgments", 2)
    data, fitted = _data_after_thresholds(campaign_id, float(parameters["fine_tolerance"]), parts)
    rng = np.random.default_rng(seed)
    n_boot, confidence = int(parameters["n_boot"]), float(parameters["confidence"])
    result: dict[str, Any] = {"schema": RESULT_SCHEMA, "scheme": data.scheme, "seed": seed, "parameters": parameters}
    progress.stage("overview", 15)
    excluded = {e["grader"] for e in data.excluded}
    result["overview"] = selectors.campaign_overview(
        campaign_id=campaign_id, excluded=excluded, judged=_judged(data.judgments), log=log
    )
    if data.client_ts_replaced:
        n = data.client_ts_replaced
        result["overview"]["implausible_client_timestamps"] = (
            f"{n} event{'s' if n != 1 else ''} {'has' if n == 1 else 'have'} a client timestamp outside the "
            "accepted window (stored by an older version); time on unit and the order of changes use the "
            "server's arrival time for them instead."
        )
    progress.stage("agreement", 20)
    shared, units = agreement_report(
        data.judgments, data.spec, n_boot=n_boot, confidence=confidence, seed=seed, kept=kept, memo=memo
    )
    result.update(shared)  # agreement, confusability, fine_within_broad
    if units_ready is not None:
        units_ready(units.copy(deep=False))  # its own frame: the model's columns are added to this one below
    progress.stage("stability", 70)
    result["stability"] = stability(data.behaviour)
    # The model comes before the graders, who draw nothing and read no per-unit row: its columns
    # complete the per-unit table, which can then be stored while the rest is computed.
    progress.stage("model", 78)
    # The graders' fitted reliabilities reach allocation after the run is stored
    # (analysis.services.model_handover); nothing here writes to allocation.
    taken = model_from() if model_from is not None and fitted is None else None
    if taken is not None and (taken.excluded, taken.pseudonyms) != data_mark(data):
        taken = None  # computed from other data (a grader excluded meanwhile): fitted here
    accounted = None
    if taken is not None:
        model, model_units, accounted = taken.model, taken.units, taken.accounting
    else:
        model, model_units = fitted or model_truth(data.judgments, data.spec, data.pseudonyms)
    del taken
    modelled = not model_units.empty and not units.empty
    if modelled:
        units = _with_model_columns(units, model_units)
    del fitted, model_units  # their columns are the table's now (80 MB at 10^7 judgments, held to the end)
    heap_release()  # what the fits freed, before the sections after them (35 MB off the queries' peak at 10^7)
    if modelled and model_ready is not None:
        model_ready(units)
    progress.stage("graders", 80)
    result["graders"] = graders(data.judgments, data.spec, data.behaviour, data.pseudonyms, memo)
    result["model"] = model
    result["accounting"] = accounted if accounted is not None else _accounting(campaign_id, model, log)  # §5.6
    # Who was excluded (by an organizer, or automatically by a threshold), and why: their judgments
    # are out of everything above.
    result["excluded_graders"] = [
        {
            "pseudonym": e["pseudonym"],
            "reason": e["reason"],
            "excluded_at": e["excluded_at"].isoformat(),
            "by": e["by"],
        }
        for e in data.excluded
    ]
    result["hidden_units"] = hidden_units_section(  # gold and repeats (§5.6); excluded graders marked
        campaign_id=campaign_id,
        scheme=data.scheme,
        pseudonyms=data.pseudonyms,
        excluded=excluded,
    )
    progress.stage("queries", 85)
    result["queries"] = queries(data.judgments, data.spec, units, data.query_labels, memo)
    if data.scheme == Scheme.ORDERING:
        progress.stage("orderings", 88)
        result["orderings"] = orderings(
            data.orderings,
            data.query_labels,
            data.pseudonyms,
            rng=rng,
            systems=selectors.system_orderings_frame(campaign_id=campaign_id),
            item_labels=selectors.candidate_labels(campaign_id=campaign_id),
        )
    else:
        progress.stage("systems", 90)
        result["systems"] = systems_section(
            data.judgments,
            data.spec,
            selectors.provenance_frame(campaign_id=campaign_id),
            selectors.system_unit_scores_frame(campaign_id=campaign_id),
            units,
            rng=rng,
            n_boot=n_boot,
            confidence=confidence,
        )
        progress.stage("instrument", 93)
        result["instrument"] = instrument_section(
            campaign_id=campaign_id, scheme=data.scheme, judgments=data.judgments, spec=data.spec
        )
    return jsonable(result), units


def _judged(judgments: Judgments) -> selectors.Judged:
    """How many judgments the run read, by whom, of how many units (for the overview)."""
    graders = frozenset(int(g) for g in judgments.graders())
    return selectors.Judged(judgments=len(judgments), graders=graders, units=judgments.units()[0].size)


def _with_model_columns(units: pd.DataFrame, model_units: pd.DataFrame) -> pd.DataFrame:
    """The per-unit table with the model's columns: ``units.merge(model_units, on="unit",
    how="left")``, which copies every column of ``units`` (430 MB at 10^7 judgments). When both
    hold the same units in the same order (the model fits every unit the table has, both sorted),
    the model's columns are set on ``units`` itself instead: the same frame, with no copy."""
    if len(units) == len(model_units) and np.array_equal(units["unit"].to_numpy(), model_units["unit"].to_numpy()):
        for column in model_units.columns.drop("unit"):
            units[column] = model_units[column].to_numpy()
        return units
    return units.merge(model_units, on="unit", how="left")
