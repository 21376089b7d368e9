"""Shared by the analysis commands: a campaign named by id or slug."""

from __future__ import annotations

from django.core.management.base import CommandError

from grading.models import Campaign


def campaign_from_arg(value: str) -> Campaign:
    campaign = Campaign.objects.filter(pk=int(value)).first() if value.isdigit() else None
    campaign = campaign or Campaign.objects.filter(slug=value).first()
    if campaign is None:
        raise CommandError(f"no campaign with id or slug {value!r}")
    return campaign
