"""Recording organizer and admin actions in the audit trail (docs/design.md §2).

Call `audit_record` inside the transaction that makes the change, so that the change and its entry
are stored together or not at all (as `event_record` does for graders' events).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from grading.models import AuditEntry, Campaign

MAX_TARGET = 200


def audit_record(
    *,
    actor: AbstractBaseUser | None,
    campaign: Campaign | None,
    action: str,
    target: str = "",
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> AuditEntry:
    """Append one entry: `actor` did `action` to `target` in `campaign`, changing `before` into
    `after`. Must run inside the transaction of the change it records."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_record must run inside the transaction of the change it records.")
    if not action:
        raise ValueError("`action` must name what was done, e.g. 'campaign.status'.")
    return AuditEntry.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_name=actor.get_username() if actor is not None and actor.is_authenticated else "",
        campaign=campaign,
        campaign_name=campaign.name if campaign is not None else "",
        action=action,
        target=target[:MAX_TARGET],
        before=_plain(before),
        after=_plain(after),
    )


@transaction.atomic
def export_record(
    *, actor: AbstractBaseUser | None, campaign: Campaign, what: str, fmt: str, analysis: int | None = None
) -> AuditEntry:
    """Who downloaded which of the campaign's data (ground truth, judgments, event log), in which
    format, and from which analysis: reading data out is recorded, as changing it is."""
    after: dict[str, Any] = {"what": what, "format": fmt}
    if analysis is not None:
        after["analysis"] = analysis
    return audit_record(actor=actor, campaign=campaign, action="export.downloaded", target=f"{what}.{fmt}", after=after)


def campaign_summary(campaign: Campaign) -> dict[str, Any]:
    """What names a campaign in an entry about its creation or deletion."""
    return {"name": campaign.name, "slug": campaign.slug, "scheme": campaign.scheme, "status": campaign.status}


def _plain(values: dict[str, Any] | None) -> dict[str, Any] | None:
    """The values as plain JSON (dates, decimals and ids as the API writes them)."""
    if values is None:
        return None
    return json.loads(json.dumps(values, cls=DjangoJSONEncoder))
