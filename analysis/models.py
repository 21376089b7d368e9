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
    # The slices of units the combining step read the judgments in (0 for a run of one shard, which
    # keeps nothing), and of those how many it never read, every section's sums of them taken from
    # the run before (``analysis.services.slice_memo``). A default in the database too, so that code
    # from before them, still running while they are added, can make a run.
    slices_total = models.PositiveIntegerField(default=0, db_default=0)
    slices_reused = models.PositiveIntegerField(default=0, db_default=0)
    # The campaign's event log as the run counted it when it planned its shards (events, first and
    # last server time, and the campaign's units: ``selectors.EventLog``), for the report's
    # overview; None before that.
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


class SideState(models.TextChoices):
    QUEUED = "queued", "Sent to another worker"
    TAKEN = "taken", "Being computed by another worker"
    DONE = "done", "Computed by another worker"
    FAILED = "failed", "Failed on another worker"
    DECLINED = "declined", "Computed by the combining step itself"


class RunModelSide(models.Model):
    """The model's fits (and the accounting that reads them) of a run's attempt, handed to another
    worker while the combining step computes the other sections (docs/analysis.md, "The model
    beside the combining step"). The combining step takes ``section``, ``accounting`` and the model's
    per-unit columns (``units``, Parquet) when the other worker finished from the same data
    (``excluded``, ``pseudonyms``), or declines the row and fits the model itself when no worker took
    it in time."""

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="+")
    attempt = models.PositiveSmallIntegerField()
    state = models.CharField(max_length=10, choices=SideState.choices, default=SideState.QUEUED)
    excluded = models.JSONField(default=list)  # the graders left out of the data the side read
    pseudonyms = models.CharField(max_length=64, blank=True, default="")  # a digest of theirs
    section = models.JSONField(null=True, blank=True)
    accounting = models.JSONField(null=True, blank=True)
    units = models.BinaryField(null=True, blank=True)
    error = models.TextField(blank=True)
    seconds = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run"], name="analysis_model_side_unique_run")]

    def __str__(self) -> str:
        return f"model beside run {self.run_id} ({self.state})"


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


class UnitBlock(models.Model):
    """A block of consecutive units (by id) of one run's per-unit results: their aggregates,
    confusability and model-based truth, as an Arrow IPC stream compressed with zstd
    (``analysis.unit_blocks``, which writes and reads them; docs/analysis.md, "Storing a run's
    results"). ``first_unit`` and ``last_unit`` bound the block's unit ids, ``rows`` counts its
    units, and the four flags say whether any of them has a BROAD distribution, label counts, a
    model label or a model score. ``model`` holds the model's columns of the block apart from the
    rest (``data`` then has them missing), so that a run can store them once its model is fitted;
    empty, they are in ``data``."""

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="unit_blocks", db_index=False)
    index = models.PositiveIntegerField()
    first_unit = models.BigIntegerField()
    last_unit = models.BigIntegerField()
    rows = models.PositiveIntegerField()
    broad = models.BooleanField(default=False)
    distribution = models.BooleanField(default=False)
    model_label = models.BooleanField(default=False)
    model_score = models.BooleanField(default=False)
    data = models.BinaryField()
    model = models.BinaryField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="analysis_unitblock_unique_index")]
        ordering = ["run_id", "index"]

    def __str__(self) -> str:
        return f"block {self.index} of run {self.run_id}"


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
