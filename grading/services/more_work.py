"""A grader who has finished asks for more: a batch of extra units, or the reason there is none
(docs/design.md §5.6)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count

from grading.models import Assignment, Campaign, Unit
from grading.models.choices import Policy
from grading.selectors import UNITS_PER_PAGE
from grading.services import allocation
from grading.services.payloads import VALUE_FIELD
from grading.services.policy_params import policy_param

# Why a request for more work added nothing, in the grader's words.
NO_MORE = {
    "fixed": "This campaign gives every unit a fixed number of graders, so there is no extra work.",
    "budget": "The campaign's judgment budget is spent.",
    "max_overlap": "Every unit you have not judged already has the most graders the campaign allows ({max_overlap}).",
    "none_needed": "No unit needs another judgment right now: the graders agree where it matters.",
}


@dataclass
class MoreWork:
    assignments: list[Assignment] = field(default_factory=list)
    reason: str | None = None  # a key of NO_MORE when nothing was added

    @property
    def added(self) -> int:
        return len(self.assignments)


def batch_size(campaign: Campaign) -> int:
    """Units handed out per request: policy_params.batch_size, by default one page."""
    return policy_param(campaign=campaign, name="batch_size", default=UNITS_PER_PAGE)


def more_work_request(*, grader: AbstractBaseUser, campaign: Campaign) -> MoreWork:
    """Ask the allocation for up to batch_size(campaign) extra units, one at a time.

    Raises CampaignClosed when the campaign takes no judgments.
    """
    result = MoreWork()
    for _ in range(batch_size(campaign)):
        assignment = allocation.assignment_extra(grader=grader, campaign=campaign)
        if assignment is None:
            break
        result.assignments.append(assignment)
    if not result.assignments:
        result.reason = no_more_reason(grader=grader, campaign=campaign)
    return result


def no_more_reason(*, grader: AbstractBaseUser, campaign: Campaign) -> str:
    """Why the allocation has nothing for this grader: a key of NO_MORE."""
    if campaign.policy == Policy.FIXED or campaign.scheme not in VALUE_FIELD:
        return "fixed"
    if campaign.budget is not None and Assignment.objects.filter(campaign=campaign).count() >= campaign.budget:
        return "budget"
    mine = Assignment.objects.filter(campaign=campaign, grader=grader, unit__isnull=False).values("unit_id")
    others = Unit.objects.filter(campaign=campaign).exclude(pk__in=mine).annotate(n=Count("assignments"))
    if others.exists() and not others.filter(n__lt=campaign.max_overlap).exists():
        return "max_overlap"
    return "none_needed"


def no_more_message(campaign: Campaign, reason: str) -> str:
    return NO_MORE[reason].format(max_overlap=campaign.max_overlap)
