"""The audit trail of organizer and admin actions (docs/design.md §2).

Graders' work is logged as GradingEvents; what organizers and admins do to a campaign (status
changes, settings and guideline edits, members and roles, gold answers, adjudications, exclusions,
join links, exports) is logged here, with who, when, what and the values before and after, in the
same transaction as the change. Entries are never changed or removed through the ORM.
"""

from __future__ import annotations

from typing import Any, NoReturn

from django.conf import settings
from django.db import models

from grading.models.campaigns import Campaign
from grading.models.judgments import AppendOnlyError


class AuditEntryQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("AuditEntry is append-only: entries are never updated.")

    def delete(self) -> NoReturn:
        raise AppendOnlyError("AuditEntry is append-only: entries are never deleted.")


class AuditEntry(models.Model):
    """One organizer or admin action: who (`actor`, and their user name at the time), when, on which
    campaign, what (`action`, a dotted name such as `campaign.status`, and `target`, what it was done
    to in words), and the values `before` and `after` (JSON objects, null when there was none)."""

    at = models.DateTimeField(auto_now_add=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Kept beside the key: the trail still says who after the account is gone.
    actor_name = models.CharField(max_length=150, blank=True)
    # A removed campaign keeps its trail (campaign_name says which it was).
    campaign = models.ForeignKey(
        Campaign, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_entries"
    )
    campaign_name = models.CharField(max_length=200, blank=True)
    action = models.CharField(max_length=64)
    target = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["campaign", "-id"], name="audit_campaign_newest")]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_name or 'system'} at {self.at:%Y-%m-%d %H:%M:%S}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError("AuditEntry is append-only: entries are never updated.")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("AuditEntry is append-only: entries are never deleted.")
