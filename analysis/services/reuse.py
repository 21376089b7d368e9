"""Shards a run takes from the campaign's last run instead of reading them (docs/analysis.md,
"Reusing shards").

A shard's part is a function of what it reads: its graders' judgments, events and hidden repeats,
the campaign's units and hidden gold, who of its graders is excluded, the FINE tolerance, the
scheme, and the code that computes it. The shard's fingerprint digests all of them
(``selectors.shard_inputs`` summarises the rows so that any insert, delete or change moves the
summary). A shard whose fingerprint equals that of a shard of the campaign's latest succeeded run
takes that shard's stored part, copied inside the database, and is counted done without reading.

The combining step computes every figure from all the parts, as it does for a run that read them
all, but for the bootstrap of alpha over many units, which takes the products of the blocks of
units whose rows and draws are those of the run before (``sums_lent``, ``sums_keep``), and the
sections that keep sums per slice of units, which take those of the slices whose rows are the run
before's, and the figures of those slices' units that it stored (``slice_memo``, ``units_lent``;
docs/analysis.md, "Reusing slices"). A grader's new work changes the fingerprint of the shard that
holds the grader, so what a run saves depends on how many shards hold graders who did nothing since.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

from django.db import transaction
from django.db.models import Exists, F, Subquery
from django.utils import timezone

from analysis import selectors, unit_blocks
from analysis.metrics import KeptSums
from analysis.models import AnalysisRun, KeptSum, RunShard, RunStatus
from analysis.selectors import GraderSpan
from analysis.services import attempts
from analysis.services.slice_memo import KEY_PREFIX, LentUnits
from grading.models import Campaign

ANALYSIS = Path(__file__).resolve().parents[1]
# The code that makes a part from the data: a part stored by other code is read again. Every
# module of the app these reach is here (tests/analysis/test_part_code.py reads the code to check).
PART_CODE = (
    "services/shards.py",
    "services/sections/behaviour.py",
    "services/values.py",
    "selectors.py",
    "pgcopy.py",
    "unit_blocks.py",  # selectors reads a run's stored per-unit results through it
    "models.py",
    "metrics/stability.py",  # each grader's stability counts and engagement, computed in the shard
    "metrics/_checks.py",
)


def fingerprints(
    *,
    campaign_id: int,
    plan: list[GraderSpan],
    excluded: set[int],
    tolerance: float,
    judged: list[selectors.GraderJudgments] | None = None,
    logged: list[selectors.GraderEvents] | None = None,
    units: selectors.CampaignUnits | None = None,
) -> list[str]:
    """One fingerprint per shard of ``plan``: equal for two shards exactly when they would read the
    same graders' same data the same way. ``judged``, ``logged``, ``units``: as
    ``selectors.shard_inputs`` takes them."""
    campaign, graders = selectors.shard_inputs(campaign_id=campaign_id, judged=judged, logged=logged, units=units)
    scheme = Campaign.objects.values_list("scheme", flat=True).get(pk=campaign_id)
    shared = {"code": _code_digest(), "scheme": scheme, "tolerance": float(tolerance), "campaign": campaign}
    out = []
    for span in plan:
        inside = sorted(g for g in graders if selectors.in_span(g, span))
        data = {
            **shared,
            "graders": [[g, *graders[g]] for g in inside],
            "excluded": sorted(excluded.intersection(inside)),
        }
        out.append(hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest())
    return out


@cache
def _code_digest() -> str:
    digest = hashlib.sha256()
    for name in PART_CODE:
        digest.update((ANALYSIS / name).read_bytes())
    return digest.hexdigest()


def parts_found(*, run: AnalysisRun, shards: list[RunShard]) -> dict[int, RunShard]:
    """Per shard of ``shards`` (planned, with their fingerprints) whose fingerprint a shard of a
    succeeded run of the campaign has, that shard (of the latest such run: only the latest keeps
    its parts, ``parts_keep_latest``), by the planned shard's id. Nothing is taken yet."""
    wanted = {s.fingerprint for s in shards if s.fingerprint}
    sources: dict[str, RunShard] = {}
    found = (
        RunShard.objects.filter(
            run__campaign_id=run.campaign_id,
            run__status=RunStatus.SUCCEEDED,
            fingerprint__in=wanted,
            part__isnull=False,
        )
        .exclude(run_id=run.pk)
        .order_by("run_id", "index")
        .only("pk", "run_id", "fingerprint", "judgments")
    )
    for source in found:
        sources[source.fingerprint] = source  # the latest run's, when several have it
    return {shard.pk: sources[shard.fingerprint] for shard in shards if shard.fingerprint in sources}


def parts_reuse(*, run: AnalysisRun, shards: list[RunShard], sources: dict[int, RunShard] | None = None) -> set[int]:
    """Give each of ``shards`` whose fingerprint a shard of a succeeded run has (``sources``, as
    ``parts_found`` gives them; found here when None) that shard's part, and count it done.
    Returns the ids of the shards given a part.

    The part is copied by one UPDATE that takes it only if it is still there: a run finishing at
    the same moment may drop it (``parts_keep_latest``), and the shard is then read. The copies and
    the count are one transaction: a task retried after a lost connection finds the shards as they
    were, not taken and uncounted."""
    sources = parts_found(run=run, shards=shards) if sources is None else sources
    with transaction.atomic():
        return _parts_taken(run, shards, sources)


def _parts_taken(run: AnalysisRun, shards: list[RunShard], sources: dict[int, RunShard]) -> set[int]:
    taken: set[int] = set()
    for shard in shards:
        source = sources.get(shard.pk)
        if source is None:
            continue
        stored = RunShard.objects.filter(pk=source.pk, part__isnull=False)
        if (
            RunShard.objects.filter(pk=shard.pk, attempt=run.attempts, finished_at__isnull=True)
            .filter(Exists(stored))
            .update(
                part=Subquery(stored.values("part")[:1]),
                judgments=source.judgments,
                reused_from_id=source.run_id,
                seconds=0.0,
                finished_at=timezone.now(),
            )
        ):
            taken.add(shard.pk)
    if taken and not attempts.run_owned(run_id=run.pk, attempt=run.attempts).update(
        shards_done=F("shards_done") + len(taken),
        shards_reused=F("shards_reused") + len(taken),
        heartbeat_at=timezone.now(),
    ):
        raise attempts.RunLost(f"run {run.pk} was taken away from attempt {run.attempts}")
    return taken


def part_read(shard: RunShard) -> bytes:
    """The stored part of ``shard``."""
    return bytes(RunShard.objects.values_list("part", flat=True).get(pk=shard.pk))


def parts_keep_latest(*, run: AnalysisRun) -> None:
    """Once ``run`` has succeeded, drop the parts of the campaign's other finished runs: only the
    latest succeeded run's parts are kept for the next run to take. Runs still at work keep theirs."""
    (
        RunShard.objects.filter(run__campaign_id=run.campaign_id, part__isnull=False)
        .filter(run__status__in=[RunStatus.SUCCEEDED, RunStatus.FAILED])
        .exclude(run_id=run.pk)
        .update(part=None)
    )


def sums_lent(*, run: AnalysisRun) -> KeptSums:
    """The bootstrap's blocks kept by the campaign's succeeded runs (the latest's: ``sums_keep``),
    lent to ``run``, which takes those it would draw the same and keeps its own there."""
    rows = (
        KeptSum.objects.filter(run__campaign_id=run.campaign_id, run__status=RunStatus.SUCCEEDED)
        .exclude(run_id=run.pk)
        .values_list("key", "sums")
    )
    return KeptSums(before={key: bytes(sums) for key, sums in rows})


def units_lent(*, run: AnalysisRun) -> LentUnits | None:
    """The per-unit rows stored by the campaign's latest succeeded run that kept slices' sums, and
    the keys it kept (``slice_memo.LentUnits``), lent to ``run``; None when no run kept any."""
    kept = KeptSum.objects.filter(key__startswith=KEY_PREFIX, run__status=RunStatus.SUCCEEDED)
    lender = (
        kept.filter(run__campaign_id=run.campaign_id)
        .exclude(run_id=run.pk)
        .order_by("-run_id")
        .values_list("run_id", flat=True)
        .first()
    )
    if lender is None:
        return None
    keys = frozenset(kept.filter(run_id=lender).values_list("key", flat=True))
    return LentUnits(rows=unit_blocks.RunUnits(lender), keys=keys)


def sums_keep(*, run: AnalysisRun, kept: KeptSums) -> None:
    """Once ``run`` has succeeded: keep its blocks for the next run, and drop the other finished
    runs' (only the latest succeeded run's are lent). A run still at work keeps what it has."""
    with transaction.atomic():
        KeptSum.objects.filter(run_id=run.pk).delete()
        KeptSum.objects.bulk_create(
            [KeptSum(run_id=run.pk, key=key, sums=sums) for key, sums in kept.kept.items()], batch_size=16
        )
    (
        KeptSum.objects.filter(run__campaign_id=run.campaign_id)
        .filter(run__status__in=[RunStatus.SUCCEEDED, RunStatus.FAILED])
        .exclude(run_id=run.pk)
        .delete()
    )
