from __future__ import annotations

import secrets
from pathlib import PurePosixPath

from django.db import models
from django.db.models import Q

from grading.models.campaigns import Campaign
from grading.models.choices import MediaKind

_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"


def new_public_id() -> str:
    """An opaque id that tells a grader nothing about the item's origin."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(12))


class MediaItem(models.Model):
    """Text, audio, image or video content, as a stored file or an external URL."""

    kind = models.CharField(max_length=10, choices=MediaKind.choices, default=MediaKind.TEXT)
    text = models.TextField(blank=True)
    media_file = models.FileField(upload_to="media/%Y/", blank=True)
    media_url = models.URLField(max_length=500, blank=True)

    class Meta:
        abstract = True

    @property
    def media_src(self) -> str:
        if self.media_file:
            return self.media_file.url
        return self.media_url


class Query(MediaItem):
    """The reference item a set of candidates is compared with."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="queries")
    external_id = models.CharField(max_length=100)
    title = models.CharField(max_length=200, blank=True)
    public_id = models.CharField(max_length=20, unique=True, default=new_public_id, editable=False)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["campaign_id", "position", "id"]
        verbose_name_plural = "queries"
        constraints = [
            models.UniqueConstraint(fields=["campaign", "external_id"], name="query_external_id_unique"),
            models.CheckConstraint(condition=Q(kind__in=MediaKind.values), name="query_kind_valid"),
        ]

    def __str__(self) -> str:
        return self.title or self.external_id


class System(models.Model):
    """An algorithm under evaluation."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="systems")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["campaign_id", "name"]
        constraints = [models.UniqueConstraint(fields=["campaign", "name"], name="system_name_unique")]

    def __str__(self) -> str:
        return self.name


class Candidate(MediaItem):
    """An item to judge. Graders see only its public id and content, never its provenance."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="candidates")
    external_id = models.CharField(max_length=100)
    public_id = models.CharField(max_length=20, unique=True, default=new_public_id, editable=False)

    class Meta:
        ordering = ["campaign_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "external_id"], name="candidate_external_id_unique"),
            models.CheckConstraint(condition=Q(kind__in=MediaKind.values), name="candidate_kind_valid"),
        ]

    def __str__(self) -> str:
        return self.external_id

    @property
    def media_src(self) -> str:
        """Blinded: a stored file is served under the opaque public id only (URL and file name), since
        its own name may carry the query's and the system's ids (grading/views/media.py)."""
        if self.media_file:
            from django.urls import reverse

            suffix = media_suffix(self.media_file.name)
            return reverse("candidate-media", kwargs={"name": f"{self.public_id}{suffix}"})
        return self.media_url


def media_suffix(name: str) -> str:
    """A file name's extension when it is a plain one (".wav"), else nothing."""
    suffix = PurePosixPath(name).suffix.lower()
    return suffix if 2 <= len(suffix) <= 9 and suffix[1:].isalnum() and suffix.isascii() else ""


class CandidateProvenance(models.Model):
    """Hidden: which system returned a candidate for a query, at which rank."""

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="provenance")
    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="provenance")
    query = models.ForeignKey(Query, null=True, blank=True, on_delete=models.CASCADE, related_name="provenance")
    rank = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["candidate_id", "system_id", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["candidate", "system", "query"], name="provenance_unique"),
            models.CheckConstraint(condition=Q(rank__isnull=True) | Q(rank__gte=1), name="provenance_rank_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.candidate} from {self.system} at rank {self.rank}"


class Unit(models.Model):
    """What one judgment is about: a query–candidate pair, a single item, or (pairwise) two items."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="units")
    external_id = models.CharField(max_length=200)
    query = models.ForeignKey(Query, null=True, blank=True, on_delete=models.CASCADE, related_name="units")
    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="units")
    # The second item of a pairwise comparison ("which of A and B is more X").
    candidate_b = models.ForeignKey(
        Candidate, null=True, blank=True, on_delete=models.CASCADE, related_name="units_as_b"
    )
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["campaign_id", "query_id", "position", "id"]
        indexes = [models.Index(fields=["campaign", "query"])]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "external_id"], name="unit_external_id_unique"),
            models.CheckConstraint(
                condition=Q(candidate_b__isnull=True) | ~Q(candidate_b=models.F("candidate")),
                name="unit_pair_distinct",
            ),
        ]

    def __str__(self) -> str:
        return self.external_id


class SystemOutput(models.Model):
    """A system's score for a unit, or its ordering of a query's candidates (candidate public ids)."""

    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="outputs")
    unit = models.ForeignKey(Unit, null=True, blank=True, on_delete=models.CASCADE, related_name="system_outputs")
    query = models.ForeignKey(Query, null=True, blank=True, on_delete=models.CASCADE, related_name="system_outputs")
    score = models.FloatField(null=True, blank=True)
    ordering = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["system", "unit"], condition=Q(unit__isnull=False), name="output_unit_unique"
            ),
            models.UniqueConstraint(
                fields=["system", "query"], condition=Q(unit__isnull=True), name="output_query_unique"
            ),
            models.CheckConstraint(
                condition=(Q(unit__isnull=False) & Q(score__isnull=False))
                | (Q(query__isnull=False) & Q(ordering__isnull=False)),
                name="output_score_or_ordering",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.system} on {self.unit or self.query}"
