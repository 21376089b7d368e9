"""Linking a rating campaign to the campaigns that measure it as an instrument (docs/design.md §5.5):
a sibling rating campaign over the same units (reproducibility) and a pairwise campaign (resolution)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from grading.errors import InvalidValue
from grading.models import Campaign
from grading.models.choices import Scheme
from grading.services.audit import audit_record

RATING_SCHEMES = (Scheme.BROAD_FINE, Scheme.NUMERIC)


@transaction.atomic
def campaign_set_instrument_links(
    *, campaign: Campaign, sibling: Campaign | None, pairwise: Campaign | None, actor: AbstractBaseUser | None
) -> Campaign:
    """Set (or clear, with None) the sibling and pairwise campaigns of a rating campaign.

    Raises InvalidValue naming the field when a link does not fit: the campaign itself, a sibling that
    is not a rating campaign of the same scheme, a pairwise link that is not a pairwise campaign.
    """
    if campaign.scheme not in RATING_SCHEMES:
        raise InvalidValue(
            "only BROAD/FINE and numeric campaigns are measured as instruments", field="campaign", value=campaign.scheme
        )
    if sibling is not None and sibling.pk == campaign.pk:
        raise InvalidValue("a campaign cannot be its own sibling", field="sibling_campaign", value=sibling.slug)
    if sibling is not None and sibling.scheme != campaign.scheme:
        raise InvalidValue(
            f"the sibling must be a {campaign.get_scheme_display()} campaign too",
            field="sibling_campaign",
            value=sibling.slug,
        )
    if pairwise is not None and pairwise.scheme != Scheme.PAIRWISE:
        raise InvalidValue(
            "the resolution campaign must be a pairwise campaign", field="pairwise_campaign", value=pairwise.slug
        )
    before = {
        "sibling_campaign": _slug(campaign.sibling_campaign),
        "pairwise_campaign": _slug(campaign.pairwise_campaign),
    }
    campaign.sibling_campaign, campaign.pairwise_campaign = sibling, pairwise
    campaign.save(update_fields=["sibling_campaign", "pairwise_campaign", "updated_at"])
    after = {"sibling_campaign": _slug(sibling), "pairwise_campaign": _slug(pairwise)}
    if after != before:
        audit_record(actor=actor, campaign=campaign, action="campaign.instrument_links", before=before, after=after)
    return campaign


def _slug(campaign: Campaign | None) -> str | None:
    return campaign.slug if campaign is not None else None
