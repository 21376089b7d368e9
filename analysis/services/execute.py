"""Executing one analysis run: claim it, read it in shards, compute the report with progress, store the result."""

from __future__ import annotations

import io
import logging
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone

from analysis import pgcopy, selectors, unit_blocks
from analysis.models import AnalysisRun, RunModelSide, RunShard, RunStatus, SideState
from analysis.reports.serialize import jsonable
from analysis.selectors import GraderSpan
from analysis.services import attempts, auto_exclusion, reuse
from analysis.services.model_handover import grader_model_hand_over
from analysis.services.report import (
    DEFAULT_TOLERANCE,
    ModelFitted,
    ModelFrom,
    exclusions_before_reading,
    model_side_compute,
    report_compute,
)
from analysis.services.shards import ShardPart, part_dumps, part_loads, shard_compute, shard_plan
from analysis.services.slice_memo import SliceMemo
from analysis.services.values import arrow_memory_release, memory_release
from grading.models import Campaign
from grading.services.payloads import VALUE_FIELD

logger = logging.getLogger(__name__)


class Transient(Exception):
    """The database went away mid-run: the task should retry."""


def run_execute(*, run_id: int, task_id: str = "", worker_heartbeat: bool = True, fan_out: FanOut | None = None) -> str:
    """Claim, compute and store one run. Returns its final status, or why it was not run.

    The run reads the campaign in shards of graders (``analysis.services.shards``). Given
    ``fan_out`` (a worker with a broker) and more than one shard to read, the shards are handed to
    it -- the Celery tasks ``analysis.shard`` and ``analysis.take`` (the parts an earlier run has),
    then ``analysis.combine`` (``shard_execute``, ``take_execute``, ``combine_execute``) -- and this
    returns "sharded"; otherwise every shard is taken or read here, one after another, and the run
    completes here.

    Any error in the computation marks the run failed with a readable message; a lost database
    connection gives the run back to the queue and raises Transient for the task to retry.
    """
    claimed = attempts.run_claim(run_id=run_id, task_id=task_id)
    if isinstance(claimed, str):
        return claimed
    run = claimed
    progress = attempts.Progress(run_id=run.pk, attempt=run.attempts)

    def body() -> str:
        progress.stage("planning shards", 1)
        exclusions_before_reading(campaign_id=run.campaign_id)
        excluded = selectors.excluded_grader_ids(campaign_id=run.campaign_id)
        value_field = VALUE_FIELD.get(Campaign.objects.values_list("scheme", flat=True).get(pk=run.campaign_id))
        # One pass over each: the plan, the fingerprints and the report's counts of both.
        judged = selectors.judgments_per_grader(campaign_id=run.campaign_id, value_field=value_field)
        logged = selectors.events_per_grader(campaign_id=run.campaign_id)
        units = selectors.CampaignUnits.counted(campaign_id=run.campaign_id)
        spans = shard_plan(campaign_id=run.campaign_id, judged=judged)
        log = selectors.EventLog.of(logged, judged, units=units.n)
        plan = _plan_store(run, spans, _fingerprints(run, spans, excluded, judged, logged, units), log)
        sources = reuse.parts_found(run=run, shards=plan) if len(plan) > 1 else {}
        unread = [shard.index for shard in plan if shard.pk not in sources]
        if fan_out is not None and len(plan) > 1 and unread:
            # The parts an earlier run has are taken by a task of their own, beside the shards read
            # (``take_execute``), not here before them: copying a part inside the database takes
            # 35 ms for each 2 MB, 0.17 s of the bench's run after new work.
            progress.stage("reading shards", 2)
            planned = progress.finish()  # kept for the combining step, which records the run's timings
            attempts.run_owned(run_id=run.pk, attempt=run.attempts).update(
                timings={k: v for k, v in planned.items() if k != "total"}
            )
            fan_out(run.pk, run.attempts, unread, [shard.index for shard in plan if shard.pk in sources])
            return SHARDED
        reused = reuse.parts_reuse(run=run, shards=plan, sources=sources) if sources else set()
        progress.stage("reading shards", 2)
        parts = []
        for shard in plan:
            if shard.pk in reused:
                parts.append(part_loads(reuse.part_read(shard), judgments=False))
                continue
            started = time.perf_counter()
            part = _shard_part(run, shard, excluded)
            judged, stored = len(part.judgments), None
            if len(plan) > 1:
                # Held as a worker's part travels (Parquet), read a slice at a time when combined: the
                # shards' frames together would be the whole campaign again (0.6 GB at 10^7 judgments).
                # Stored too, for a later run to take while the shard's data stays the same.
                stored = part_dumps(part)
                part = part_loads(stored, judgments=False)
                memory_release()
            parts.append(part)
            _shard_done(run, shard, judgments=judged, seconds=time.perf_counter() - started, stored=stored)
        return _complete(run, progress, parts)

    return _attempt(run, progress, body, heartbeat=worker_heartbeat)


def shard_execute(*, run_id: int, attempt: int, index: int) -> str:
    """One shard of a run split across workers (the task ``analysis.shard``): read its graders, keep
    their part for the combining step, count the shard done. A shard of an attempt that no longer
    owns the run, or one already done (a redelivered message), does nothing."""
    run = _owned(run_id, attempt)
    shard = RunShard.objects.filter(run_id=run_id, attempt=attempt, index=index, finished_at__isnull=True).first()
    if run is None or shard is None:
        return "lost" if run is None else "done"
    progress = attempts.Progress(run_id=run.pk, attempt=attempt)

    def body() -> str:
        started = time.perf_counter()
        part = _shard_part(run, shard, selectors.excluded_grader_ids(campaign_id=run.campaign_id))
        judged, stored = len(part.judgments), part_dumps(part)
        del part
        _shard_done(run, shard, judgments=judged, seconds=time.perf_counter() - started, stored=stored)
        del stored
        memory_release()  # the worker's next task starts from its own memory
        return "done"

    where = f"shard {index + 1} of {run.shards_total}"
    return _attempt(run, progress, body, heartbeat=True, where=where, release=False)


def take_execute(*, run_id: int, attempt: int, indexes: list[int]) -> str:
    """The shards of a run split across workers whose parts an earlier run has (the task
    ``analysis.take``, sent with the shards to read): take those parts (``reuse.parts_reuse``, each
    counted done), and read any shard whose part was dropped meanwhile, as its own task would."""
    run = _owned(run_id, attempt)
    if run is None:
        return "lost"
    shards = list(RunShard.objects.filter(run_id=run_id, attempt=attempt, index__in=indexes, finished_at__isnull=True))
    taken: set[int] = set()

    def body() -> str:
        taken.update(reuse.parts_reuse(run=run, shards=shards))
        return "done"

    progress = attempts.Progress(run_id=run.pk, attempt=attempt)
    status = _attempt(run, progress, body, heartbeat=False, where="taking an earlier run's parts", release=False)
    if status != "done":
        return status
    for shard in shards:
        if (
            shard.pk not in taken
            and (status := shard_execute(run_id=run_id, attempt=attempt, index=shard.index)) != "done"
        ):
            return status
    return "done"


SideOut = Callable[[int, int], None]  # (run id, attempt): send the model's task to another worker


def combine_execute(*, run_id: int, attempt: int, side: SideOut | None = None) -> str:
    """The last step of a run split across workers (the task ``analysis.combine``, run once every
    shard is done): combine the shards' parts, compute the report and store it.

    Given ``side`` (a worker with a broker), the model and the accounting are handed to another
    worker (``model_side_execute``) while this one computes the sections before them, and taken
    from it when they are due (``_model_beside``)."""
    run = _owned(run_id, attempt)
    if run is None:
        return "lost"
    progress = attempts.Progress(run_id=run.pk, attempt=attempt)

    def body() -> str:
        shards = RunShard.objects.filter(run_id=run.pk, attempt=attempt).order_by("index")
        seconds = list(shards.values_list("seconds", flat=True))
        missing = [index + 1 for index in shards.filter(part__isnull=True).values_list("index", flat=True)]
        if missing:
            raise RuntimeError(f"shard(s) {', '.join(map(str, missing))} of {len(seconds)} left no part")
        progress.timings.update(run.timings or {})  # the planning, as the run's own task recorded it
        progress.timings["reading shards"] = round(sum(s or 0.0 for s in seconds), 4)
        memory_release()  # what this worker's earlier tasks left held
        parts = _parts_loaded(shards)
        model_from = _model_beside(run, attempt, side) if side is not None else None
        return _complete(run, progress, parts, model_from=model_from)

    return _attempt(run, progress, body, heartbeat=True, release=False)


def _parts_loaded(shards: Any) -> list[ShardPart]:
    """The stored parts of ``shards`` (a query of ``RunShard``, in order), one fetched at a time:
    ``part_loads`` keeps each zip's tables to be read a slice at a time later, so holding the
    fetched rows as well would hold every part twice. Fetched in binary (``pgcopy.rows_binary``):
    the six parts of the bench's run after new work (11 MB) in 0.045 s, against 0.12 s as hex."""
    parts = []
    for pk in shards.values_list("pk", flat=True):
        for (data,) in pgcopy.rows_binary(RunShard.objects.filter(pk=pk).values_list("part")):
            parts.append(part_loads(bytes(data), judgments=False))
    return parts


def _model_beside(run: AnalysisRun, attempt: int, side: SideOut) -> ModelFrom | None:
    """Hand the model to another worker (a ``RunModelSide`` row, then ``side``) and return what takes
    it back when it is due: its result once that worker is done, or None -- the model is then fitted
    here -- when no worker took it by then (the row is declined, so that none starts it later), when
    it failed, or when it was taken but not done within ``ANALYSIS_STALE_SECONDS``. Not when a
    reliability threshold fits the model before every section (``report._data_after_thresholds``)."""
    campaign = Campaign.objects.get(pk=run.campaign_id)
    if auto_exclusion.thresholds_of(campaign).reliability_below is not None:
        return None
    RunModelSide.objects.filter(run_id=run.pk).delete()  # an earlier attempt's
    RunModelSide.objects.create(run_id=run.pk, attempt=attempt)
    side(run.pk, attempt)
    mine = RunModelSide.objects.filter(run_id=run.pk, attempt=attempt)

    def take() -> ModelFitted | None:
        if mine.filter(state=SideState.QUEUED).update(state=SideState.DECLINED):
            return None  # no worker took it: fitted here
        deadline = time.monotonic() + attempts.stale_seconds()
        while time.monotonic() < deadline:
            state = mine.values_list("state", flat=True).first()
            if state == SideState.DONE:
                taken = _model_taken(mine.defer("units").get(), _model_bytes(mine))
                mine.update(units=None)  # the columns are the run's per-unit rows now: not kept twice
                return taken
            if state != SideState.TAKEN:
                return None
            time.sleep(SIDE_POLL_SECONDS)
        mine.filter(state=SideState.TAKEN).update(state=SideState.DECLINED)
        return None

    return take


SIDE_POLL_SECONDS = 0.05


def _model_bytes(mine: Any) -> bytes:
    """The model's per-unit columns as the other worker left them (Parquet), fetched in binary."""
    ((units,),) = pgcopy.rows_binary(mine.values_list("units"))
    return bytes(units)


def _model_taken(row: RunModelSide, units_parquet: bytes) -> ModelFitted:
    units = pq.read_table(pa.BufferReader(units_parquet)).to_pandas(self_destruct=True, split_blocks=True)
    arrow_memory_release()  # what Arrow's pool held for the table (as ``pgcopy`` gives it back)
    return ModelFitted(
        model=row.section,
        units=units,
        accounting=row.accounting,
        excluded=list(row.excluded),
        pseudonyms=row.pseudonyms,
    )


def model_side_execute(*, run_id: int, attempt: int) -> str:
    """The model and the accounting of a run's attempt, on a worker beside the one that combines its
    parts (the task ``analysis.model_side``): read the parts, fit, and leave the result in the run's
    ``RunModelSide`` row for the combining step to take. Does nothing for a row it no longer waits
    for (declined, or of an attempt that lost the run); a failure is recorded on the row, and the
    combining step then fits the model itself."""
    run = _owned(run_id, attempt)
    if run is None:
        return "lost"
    mine = RunModelSide.objects.filter(run_id=run_id, attempt=attempt)
    if not mine.filter(state=SideState.QUEUED).update(state=SideState.TAKEN):
        return "declined"
    started = time.perf_counter()
    try:
        memory_release()  # what this worker's earlier tasks left held
        parts = _parts_loaded(RunShard.objects.filter(run_id=run_id, attempt=attempt).order_by("index"))
        fitted = model_side_compute(
            campaign_id=run.campaign_id,
            parameters=run.parameters,
            parts=parts,
            log=selectors.EventLog.loaded(run.event_log),
        )
        del parts
        units = io.BytesIO()
        fitted.units.to_parquet(units, index=False)
        pgcopy.update_bound(  # the columns' bytes in binary (26 MB at 10^7 judgments: 0.65 s as text)
            mine.filter(state=SideState.TAKEN),
            state=SideState.DONE,
            section=jsonable(fitted.model),
            accounting=jsonable(fitted.accounting),
            units=units.getvalue(),
            excluded=fitted.excluded,
            pseudonyms=fitted.pseudonyms,
            seconds=round(time.perf_counter() - started, 4),
        )
        return "done"
    except Exception as exc:  # the combining step fits the model itself
        logger.exception("analysis run %s: the model beside the combining step failed", run_id)
        mine.filter(state=SideState.TAKEN).update(state=SideState.FAILED, error=f"{type(exc).__name__}: {exc}")
        return RunStatus.FAILED
    finally:
        memory_release()


# (run id, attempt, indexes of the shards to read, indexes of those whose parts an earlier run has): send their tasks
FanOut = Callable[[int, int, list[int], list[int]], None]
SHARDED = "sharded"


def _attempt(
    run: AnalysisRun,
    progress: attempts.Progress,
    body: Callable[[], str],
    *,
    heartbeat: bool,
    where: str = "",
    release: bool = True,
) -> str:
    """Run ``body`` for this attempt at ``run``, with a heartbeat from a side thread, and turn what
    goes wrong into the run's state: lost ownership, a database gone (Transient), a failure.

    On a database error the whole run goes back to the queue (``release``), except for a shard or
    the combining step of a run handed out in shards: their task is retried on its own, and the
    other shards' parts stay."""
    try:
        with attempts.heartbeat_thread(progress) if heartbeat else nullcontext():
            return body()
    except attempts.RunLost:
        logger.warning("analysis run %s: attempt %s lost ownership; result discarded", run.pk, run.attempts)
        return "lost"
    except (OperationalError, InterfaceError) as exc:
        if release:
            _release_quietly(run, f"Database error, retrying: {exc}")
        raise Transient(str(exc)) from exc
    except Exception as exc:  # the run records any failure; the worker carries on
        where = where or f"“{progress._stage}”"
        logger.exception("analysis run %s failed in %s", run.pk, where)
        attempts.run_fail(run_id=run.pk, attempt=progress.attempt, error=f"{type(exc).__name__} during {where}: {exc}")
        return RunStatus.FAILED


def _complete(
    run: AnalysisRun, progress: attempts.Progress, parts: list[ShardPart], *, model_from: ModelFrom | None = None
) -> str:
    """Compute the report and store it. On PostgreSQL the per-unit rows are stored while the report's
    last sections are computed (``_StoreAlongside``), in the transaction that then stores the result."""
    alongside = _StoreAlongside(run) if _StoreAlongside.possible() else None
    kept = reuse.sums_lent(run=run)
    memo = SliceMemo(kept, units=reuse.units_lent(run=run))  # the sections' sums of slices, kept beside the blocks
    try:
        result, units = report_compute(
            campaign_id=run.campaign_id,
            parameters=run.parameters,
            seed=run.seed,
            progress=progress,
            parts=parts,
            log=selectors.EventLog.loaded(run.event_log),
            units_ready=alongside.start if alongside is not None else None,
            model_ready=alongside.model if alongside is not None else None,
            kept=kept,
            memo=memo,
            model_from=model_from,
        )
        progress.stage("storing results", 95)
        run.bootstrap_blocks, run.bootstrap_blocks_reused = kept.blocks, kept.taken  # stored with the result
        run.slices_total, run.slices_reused = memo.slices, memo.slices_reused
        if alongside is not None and alongside.started:
            stored = alongside.finish(result, progress)
        else:
            stored = _store(run, result, units, progress)
    except BaseException:
        if alongside is not None:
            alongside.abandon()  # its transaction is rolled back: no row of a failed run is kept
        raise
    if not stored:
        return "lost"
    reuse.parts_keep_latest(run=run)  # this run's parts stay, for the next run to take what has not changed
    reuse.sums_keep(run=run, kept=kept)  # and its bootstrap's blocks
    grader_model_hand_over(campaign_id=run.campaign_id, model=result.get("model") or {})
    return RunStatus.SUCCEEDED


def _owned(run_id: int, attempt: int) -> AnalysisRun | None:
    return attempts.run_owned(run_id=run_id, attempt=attempt).first()


def _fingerprints(
    run: AnalysisRun,
    plan: list[GraderSpan],
    excluded: set[int],
    judged: list[selectors.GraderJudgments],
    logged: list[selectors.GraderEvents],
    units: selectors.CampaignUnits,
) -> list[str]:
    """The shards' fingerprints (``reuse.fingerprints``); none for a run of one shard, which keeps no
    part to be taken."""
    if len(plan) < 2:
        return [""] * len(plan)
    tolerance = float(run.parameters.get("fine_tolerance", DEFAULT_TOLERANCE))
    return reuse.fingerprints(
        campaign_id=run.campaign_id,
        plan=plan,
        excluded=excluded,
        tolerance=tolerance,
        judged=judged,
        logged=logged,
        units=units,
    )


def _plan_store(
    run: AnalysisRun, plan: list[GraderSpan], fingerprints: list[str], log: selectors.EventLog
) -> list[RunShard]:
    """The run's shards for this attempt, replacing any of an earlier attempt, and the event log as
    the plan counted it (on ``run`` too, for the combining step when it runs here)."""
    run.event_log = log.stored()
    with transaction.atomic():
        if not attempts.run_owned(run_id=run.pk, attempt=run.attempts).update(
            shards_total=len(plan), shards_done=0, shards_reused=0, event_log=run.event_log
        ):
            raise attempts.RunLost(f"run {run.pk} was taken away from attempt {run.attempts}")
        RunShard.objects.filter(run_id=run.pk).delete()
        return RunShard.objects.bulk_create(
            RunShard(run_id=run.pk, attempt=run.attempts, index=i, graders=list(span), fingerprint=print_)
            for i, (span, print_) in enumerate(zip(plan, fingerprints, strict=True))
        )


def _shard_part(run: AnalysisRun, shard: RunShard, excluded: set[int]) -> ShardPart:
    low, high = shard.graders
    return shard_compute(
        campaign_id=run.campaign_id,
        span=(low, high),
        excluded=excluded,
        tolerance=float(run.parameters.get("fine_tolerance", DEFAULT_TOLERANCE)),
    )


def _shard_done(
    run: AnalysisRun, shard: RunShard, *, judgments: int, seconds: float, stored: bytes | None = None
) -> None:
    """Count the shard done (once), keeping its part (``part_dumps``) for the combining step and for
    a later run to take (``reuse``)."""
    with transaction.atomic():
        done = pgcopy.update_bound(  # the part's bytes in binary
            RunShard.objects.filter(pk=shard.pk, attempt=run.attempts, finished_at__isnull=True),
            judgments=judgments,
            seconds=round(seconds, 4),
            part=stored,
            finished_at=timezone.now(),
        )
        if done and not attempts.run_owned(run_id=run.pk, attempt=run.attempts).update(
            shards_done=F("shards_done") + 1, heartbeat_at=timezone.now()
        ):
            raise attempts.RunLost(f"run {run.pk} was taken away from attempt {run.attempts}")


def _release_quietly(run: AnalysisRun, error: str) -> None:
    try:
        attempts.run_release(run_id=run.pk, attempt=run.attempts, error=error)
    except Exception:  # the database is gone; the sweeper will find the run
        logger.exception("analysis run %s: could not release", run.pk)


def _store(run: AnalysisRun, result: dict[str, Any], units: pd.DataFrame, progress: attempts.Progress) -> bool:
    """Store the per-unit rows and the result in one transaction, here; False if the run was lost."""
    if not _stored_together(run, units, lambda: (result, progress)):
        return False
    _stored_after_commit(run, progress)
    return True


def _stored_together(
    run: AnalysisRun,
    units: pd.DataFrame,
    handed: Callable[[], tuple[dict[str, Any], attempts.Progress] | None],
    modelled: Callable[[], pd.DataFrame | None] = lambda: None,
) -> bool:
    """The store's one transaction: the per-unit rows, then the model's columns of the table that
    ``modelled`` gives once they are written (None: none to add), then the result and progress that
    ``handed`` gives (None: abandoned). False, with nothing kept, if the run was lost or the store
    abandoned."""
    try:
        with transaction.atomic():
            if not _rows_write(run, units):
                return False
            model = modelled()
            if model is not None:
                unit_blocks.write_model(run.pk, model)
            del model
            given = handed()
            if given is None or not _result_write(run, *given):
                raise _Abandoned  # abandoned, or lost at the last moment: the rows go back with it
    except _Abandoned:
        return False
    return True


def _rows_write(run: AnalysisRun, units: pd.DataFrame) -> bool:
    """Inside the store's transaction: lock the run, and write its per-unit results (as blocks,
    ``unit_blocks.write``) in place of any it had. False (nothing written) if this attempt no
    longer owns the run.

    On PostgreSQL the lock is FOR KEY SHARE: the blocks' foreign key to the run needs no more, a
    delete of the run waits for it, and the stage and the heartbeat that this attempt writes
    meanwhile (``_StoreAlongside``) do not wait."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            owned = attempts.run_owned(run_id=run.pk, attempt=run.attempts).values("pk").order_by()
            sql, params = owned.query.sql_with_params()
            cursor.execute(f"{sql} FOR KEY SHARE", params)
            if cursor.fetchone() is None:
                return False
    elif not attempts.run_owned(run_id=run.pk, attempt=run.attempts).select_for_update().exists():
        return False
    unit_blocks.write(run.pk, units)
    return True


def _result_write(run: AnalysisRun, result: dict[str, Any], progress: attempts.Progress) -> bool:
    """Inside the store's transaction, after the rows: the run succeeded with ``result``, if this
    attempt still owns it (False: the caller rolls the rows back)."""
    timings = progress.finish()
    return bool(
        pgcopy.update_bound(  # the result's JSON as a parameter, not quoted into the statement's text
            attempts.run_owned(run_id=run.pk, attempt=run.attempts),
            status=RunStatus.SUCCEEDED,
            result=result,
            page_result=selectors.page_result_of(result),
            progress=100,
            stage="done",
            error="",
            timings=timings,
            finished_at=timezone.now(),
            heartbeat_at=timezone.now(),
            bootstrap_blocks=run.bootstrap_blocks,
            bootstrap_blocks_reused=run.bootstrap_blocks_reused,
            slices_total=run.slices_total,
            slices_reused=run.slices_reused,
        )
    )


def _stored_after_commit(run: AnalysisRun, progress: attempts.Progress) -> None:
    """The COMMIT ends the "storing results" stage, so the stage and the run end only once it is done:
    a second write, outside the result's transaction."""
    AnalysisRun.objects.filter(pk=run.pk).update(timings=progress.finish(), finished_at=timezone.now())


class _Abandoned(Exception):
    """The store's transaction is to be rolled back."""


class _StoreAlongside:
    """PostgreSQL: the per-unit rows stored on a connection of their own, from a thread, while the
    report's last sections are computed: the units' own figures as soon as they are final
    (``report_compute``'s ``units_ready``, after the agreement sections), the model's columns once
    the model is fitted (``model_ready``); the result joins the same transaction when it is done
    (``finish``), so the rows and the result are committed together, as by ``_store``, and the
    blocks are those ``_store`` writes.

    Storing the blocks of 2,000,000 units takes 0.5–0.6 s at 10^7 judgments, most of it this
    process's compressing them, which then happens beside the stability, the model and the sections
    after it (docs/analysis.md, "Storing a run's results"). Not inside a transaction of the caller
    (a test's): another connection would not see what it has not committed."""

    def __init__(self, run: AnalysisRun) -> None:
        self.run = run
        self._handed = threading.Event()
        self._result: tuple[dict[str, Any], attempts.Progress] | None = None
        self._modelled = threading.Event()
        self._model: pd.DataFrame | None = None
        self._outcome: bool | BaseException = False
        self._thread: threading.Thread | None = None

    @staticmethod
    def possible() -> bool:
        return pgcopy.available() and not connection.in_atomic_block

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self, units: pd.DataFrame) -> None:
        """Begin the store's transaction and write the rows of ``units`` (not changed after this)
        without the model's columns."""
        thread = threading.Thread(target=self._store, args=(units,), name=f"analysis-store-{self.run.pk}", daemon=True)
        thread.start()
        self._thread = thread

    def model(self, units: pd.DataFrame) -> None:
        """Hand the store the table with the model's columns (not changed after this), to write them
        once the rows are written."""
        self._model = units
        self._modelled.set()

    def finish(self, result: dict[str, Any], progress: attempts.Progress) -> bool:
        """Hand the result to the store's transaction and wait for its COMMIT; False if the run was
        lost (nothing stored), the store's error if it failed."""
        self._result = (result, progress)
        self._modelled.set()  # no model's columns to come, if none came
        self._handed.set()
        assert self._thread is not None
        self._thread.join()
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        if self._outcome:
            _stored_after_commit(self.run, progress)
        return self._outcome

    def abandon(self) -> None:
        """Roll the store back (the report failed) and wait for that: the store is woken with no result."""
        if self._thread is not None:
            self._modelled.set()
            self._handed.set()
            self._thread.join()

    def _given(self) -> tuple[dict[str, Any], attempts.Progress] | None:
        """The result, once ``finish`` hands it (None: woken by ``abandon`` before any was handed)."""
        self._handed.wait()
        return self._result

    def _given_model(self) -> pd.DataFrame | None:
        """The table with the model's columns, once ``model`` hands it (None: woken by ``finish`` or
        ``abandon`` without one)."""
        self._modelled.wait()
        model, self._model = self._model, None  # held by the store no longer than it writes them
        return model

    def _store(self, units: pd.DataFrame) -> None:
        try:
            self._outcome = _stored_together(self.run, units, self._given, self._given_model)
        except BaseException as exc:  # the caller raises it (a lost database: the task retries)
            self._outcome = exc
        finally:
            connection.close()  # this thread's own
