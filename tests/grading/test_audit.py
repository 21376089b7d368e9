"""The audit trail's record: one append-only entry per organizer or admin action, written in the
change's own transaction (docs/design.md §2)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import transaction

from grading.models import AuditEntry
from grading.models.judgments import AppendOnlyError
from grading.services.audit import audit_record
from tests.factories import make_campaign, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_backends]


def test_an_entry_says_who_what_and_the_values_before_and_after():
    campaign = make_campaign(graders=1)
    organizer = make_user("olga")
    with transaction.atomic():
        entry = audit_record(
            actor=organizer,
            campaign=campaign,
            action="campaign.status",
            target="campaign",
            before={"status": "draft"},
            after={"status": "open", "when": dt.date(2026, 1, 2), "rate": Decimal("1.50")},
        )
    stored = AuditEntry.objects.get(pk=entry.pk)
    assert (stored.actor, stored.actor_name, stored.campaign, stored.campaign_name) == (
        organizer,
        "olga",
        campaign,
        campaign.name,
    )
    assert stored.action == "campaign.status"
    assert stored.before == {"status": "draft"}
    assert stored.after == {"status": "open", "when": "2026-01-02", "rate": "1.50"}


def test_it_refuses_to_record_outside_a_transaction():
    with pytest.raises(RuntimeError, match="inside the transaction"):
        audit_record(actor=None, campaign=None, action="campaign.status")
    assert AuditEntry.objects.count() == 0


def test_an_entry_is_rolled_back_with_the_change_it_records():
    campaign = make_campaign(graders=1)
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        audit_record(actor=None, campaign=campaign, action="campaign.settings")
        1 / 0  # noqa: B018 - the change fails after its entry was written
    assert AuditEntry.objects.count() == 0


def test_entries_are_never_changed_or_removed():
    with transaction.atomic():
        entry = audit_record(actor=None, campaign=None, action="user.organizer", target="someone")
    entry.target = "someone else"
    with pytest.raises(AppendOnlyError):
        entry.save()
    with pytest.raises(AppendOnlyError):
        entry.delete()
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.filter(pk=entry.pk).update(target="x")
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.all().delete()
    assert AuditEntry.objects.get(pk=entry.pk).target == "someone"


def test_the_trail_outlives_the_actor_and_the_campaign():
    campaign = make_campaign(graders=1, assign=False)
    organizer = make_user("gone")
    with transaction.atomic():
        entry = audit_record(actor=organizer, campaign=campaign, action="campaign.settings")
    name = campaign.name
    organizer.delete()
    campaign.delete()
    stored = AuditEntry.objects.get(pk=entry.pk)
    assert (stored.actor, stored.actor_name, stored.campaign, stored.campaign_name) == (None, "gone", None, name)
