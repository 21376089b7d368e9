from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from grading.models import Campaign


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class RunTrigger(models.TextChoices):
    MANUAL = "manual", "Started from the report page"
    API = "api", "Started through the API"
    CLI = "cli", "Started from the command line"
    AUTO = "auto", "Started after new judgments"


class AnalysisRun(models.Model):
    """One background computation over a campaign: parameters in, progress while it works, result out."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="analysis_runs")
    kind = models.CharField(max_length=30, default="campaign_report")
    # #1, #2, ... within the campaign: how organizers name runs (the id is global).
    number = models.PositiveIntegerField(null=True, blank=True, editable=False)
    parameters = models.JSONField(default=dict, blank=True)
    seed = models.BigIntegerField(default=0)
    trigger = models.CharField(max_length=10, choices=RunTrigger.choices, default=RunTrigger.MANUAL)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)
    stage = models.CharField(max_length=100, blank=True)
    result = models.JSONField(null=True, blank=True)
    # The result as the report page reads it, cut when the run is stored (selectors.page_result_of):
    # the per-query figures of the most disagreeing queries only. None for runs stored before.
    page_result = models.JSONField(null=True, blank=True, editable=False)
    error = models.TextField(blank=True)
    timings = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    task_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    not_before = models.DateTimeField(null=True, blank=True, help_text="Debounced runs start no earlier than this.")
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A run split into shards of graders (docs/analysis.md, "Sharded runs"): how many there are and
    # how many have finished, while it works. 0 of 0 until the run is planned.
    shards_total = models.PositiveIntegerField(default=0)
    shards_done = models.PositiveIntegerField(default=0)
    # Of the done, how many were not read but taken from an earlier run whose shard read the same
    # data (``analysis.services.reuse``).
    shards_reused = models.PositiveIntegerField(default=0)
    # Blocks of units that alpha's bootstrap drew over (beyond 2^20 units; 0 when it drew over all
    # units at once), and how many of them it took from the run before (``metrics.KeptSums``).
    bootstrap_blocks = models.PositiveIntegerField(default=0)
    bootstrap_blocks_reused = models.PositiveIntegerField(default=0)
    # The campaign's event log as the run counted it when it planned its shards (events, first and
    # last server time: ``selectors.EventLog``), for the report's overview; None before that.
    event_log = models.JSONField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["campaign", "status"])]
        constraints = [
            models.CheckConstraint(condition=Q(progress__lte=100), name="analysis_progress_0_100"),
            models.CheckConstraint(condition=Q(status__in=RunStatus.values), name="analysis_status_valid"),
            # Debouncing: at most one automatic run waits in the queue per campaign.
            models.UniqueConstraint(
                fields=["campaign"], condition=Q(status="queued", trigger="auto"), name="analysis_one_queued_auto_run"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.number or self.pk} of {self.campaign} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (RunStatus.SUCCEEDED, RunStatus.FAILED)


class RunShard(models.Model):
    """One shard of a run's attempt: the graders it reads and, once done, what it found.

    ``part`` holds the shard's reduced data (``analysis.services.shards.ShardPart``: the graders'
    judgments and per-grader behaviour figures, never their raw events); the combining step reads
    every shard's part. Rows of an earlier attempt are replaced when the run is planned again.

    ``fingerprint`` digests what the shard reads (``analysis.services.reuse``): a later run's shard
    with the same fingerprint takes this part instead of reading again (``reused_from`` then names
    the run it came from). Parts are kept for the campaign's latest succeeded run only."""

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="shards")
    attempt = models.PositiveSmallIntegerField()
    index = models.PositiveIntegerField()
    graders = models.JSONField(default=list)
    judgments = models.PositiveIntegerField(default=0)
    part = models.BinaryField(null=True, blank=True)
    fingerprint = models.CharField(max_length=64, blank=True, default="")
    reused_from = models.ForeignKey(AnalysisRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    seconds = models.FloatField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="analysis_shard_unique_index")]

    def __str__(self) -> str:
        return f"shard {self.index} of run {self.run_id}"


class KeptSum(models.Model):
    """The bootstrap's products of one block of units, kept by a run for the next run of its campaign
    (docs/analysis.md, "Reusing the bootstrap's blocks"): ``sums`` holds ``n_boot`` rows of the
    block's products (float64, little-endian) and ``key`` digests everything they depend on
    (``analysis.metrics.bootstrap.KeptSums``), so a later run takes them only where it would draw
    the same. Only the campaign's latest succeeded run keeps its blocks."""

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="kept_sums")
    key = models.CharField(max_length=32)
    sums = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="analysis_keptsum_unique_key")]

    def __str__(self) -> str:
        return f"kept block {self.key} of run {self.run_id}"


# The advisory lock of a campaign's per-unit rows: (namespace, campaign id modulo 2^31 - 1), held
# shared by a run's store and exclusively by a unit's deletion (migration analysis/0013's trigger).
UNIT_ROWS_LOCK_NAMESPACE = 1431917653


def unit_rows_lock(campaign_id: int) -> tuple[int, int]:
    """The two keys of ``pg_advisory_xact_lock*`` for the per-unit rows of ``campaign_id``."""
    return UNIT_ROWS_LOCK_NAMESPACE, campaign_id % (2**31 - 1)


class UnitResult(models.Model):
    """One unit's aggregates and confusability as computed by one analysis run.

    Stored as rows rather than inside ``AnalysisRun.result`` so that a campaign of 200,000 units
    does not make every report view parse a huge JSON document: the report queries the few rows it
    shows, and the ground-truth export streams them.
    """

    # Keyed by (run, unit), with no id of its own: each index costs each of a run's rows an insert,
    # and the id's and the (run, unit) constraint's took 3 of the 9 s of storing 2,000,000 rows
    # (migration analysis/0014). No index of its own on run: the key begins with it. Nor on a measure: the
    # run picks the units the report shows by std (``sections.agreement.extremes``), and every index
    # costs each of a run's rows an insert (storing a run's 2,000,000 rows took 65 s with the two on
    # std and entropy, 43 s without).
    # Nor a foreign-key constraint: checking it took a lock on the run once for each of a run's rows,
    # 16 s of the 52 s of storing 2,000,000 of them. The rows are written only by the run's store
    # (``execute._store``), which holds the run's row locked until they are committed, and a trigger
    # deletes a deleted run's rows in the database, whoever deletes it and even mid-store (migration
    # analysis/0012; docs/analysis.md, "Storing a run's results").
    pk = models.CompositePrimaryKey("run", "unit")
    run = models.ForeignKey(
        AnalysisRun, on_delete=models.CASCADE, related_name="unit_results", db_index=False, db_constraint=False
    )
    # Nor on the unit: checking it locked each unit's row at the COMMIT, 9 of the 22 s of storing
    # 2,000,000 rows. The store holds a lock of the campaign shared (``unit_rows_lock``) and drops
    # the rows of units gone since the run read them; deleting a unit takes that lock exclusively
    # and deletes the unit's rows in the database (migration analysis/0013). For that delete the
    # unit has an index outside the model's state: BRIN on PostgreSQL (almost free to insert into,
    # as a run writes its rows in unit order), a B-tree on SQLite (migration analysis/0014).
    unit = models.ForeignKey(
        "grading.Unit", on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    query_id = models.BigIntegerField(null=True, blank=True)
    n = models.PositiveIntegerField()
    mean = models.FloatField(null=True)
    median = models.FloatField(null=True)
    majority = models.FloatField(null=True)
    dif = models.FloatField(null=True)
    std = models.FloatField(null=True)
    entropy = models.FloatField(null=True)
    # The BROAD distribution (broad_fine campaigns), or label counts (categorical) in `distribution`.
    n_ns = models.PositiveIntegerField(null=True)
    n_ss = models.PositiveIntegerField(null=True)
    n_vs = models.PositiveIntegerField(null=True)
    distribution = models.JSONField(null=True, blank=True)
    # Model-based truth (docs/design.md §5.6): the Dawid–Skene label (its position in the scale, like
    # `majority`) with its posterior probability; the bias + noise model's score with its standard error.
    model_label = models.FloatField(null=True)
    model_probability = models.FloatField(null=True)
    model_score = models.FloatField(null=True)
    model_se = models.FloatField(null=True)

    class Meta:
        ordering = ["run_id", "unit_id"]

    def __str__(self) -> str:
        return f"unit {self.unit_id} in run {self.run_id}"


class SystemEvaluation(models.Model):
    """The uploaded system scores evaluated against one run's units under settings an organizer chose
    on the report page (ground truth, confusability measure, low-confusability threshold; docs/design.md
    §5.7). Computed when asked for, by a POST, and stored: the report page only shows it."""

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="system_evaluations")
    key = models.CharField(max_length=100, help_text="aggregate|measure|threshold: one evaluation per run and key.")
    aggregate = models.CharField(max_length=20)
    measure = models.CharField(max_length=20)
    threshold = models.FloatField(null=True, blank=True, help_text="Empty: the median of the measure.")
    uploaded = models.JSONField(help_text="The systems section's `uploaded` part under these settings.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="system_evaluation_unique")]

    def __str__(self) -> str:
        return f"{self.key} of run {self.run_id}"

    @staticmethod
    def key_of(*, aggregate: str, measure: str, threshold: float | None) -> str:
        return f"{aggregate}|{measure}|{'' if threshold is None else repr(float(threshold))}"
