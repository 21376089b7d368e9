"""A grader who has finished asks for more: a batch of extra units, or the reason there is none
(docs/design.md §5.6).

The reason is the allocation's own code (``grading.services.allocation.REASONS``), given by
``assignment_extra_explained``, which takes the same steps as the next API once the grader's own
work is done, and put in the grader's words by ``reason_message``: the page and the API cannot
disagree about why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser

from grading.models import Assignment, Campaign
from grading.models.choices import AssignmentStatus, Policy
from grading.selectors import UNITS_PER_PAGE
from grading.services import allocation
from grading.services.policy_params import policy_param

# The grader still has open assignments of their own: the next API would serve those.
OWN_WORK_OPEN = "own_work_open"
# Each reason code of the allocation (and OWN_WORK_OPEN), in the grader's words.
REASON_WORDS = {
    allocation.BUDGET_SPENT: "The campaign's judgment budget is spent.",
    allocation.ALREADY_JUDGED: "The units that still need another judgment have all had yours already.",
    allocation.OTHERS_JUDGING: (
        "Other graders are still judging units that may need one more judgment: ask again a little later."
    ),
    allocation.MAX_OVERLAP_REACHED: (
        "The units that still need judgments already have the most graders the campaign allows ({max_overlap})."
    ),
    allocation.NOTHING_NEEDED: "Nothing needs another judgment right now: the graders agree where it matters.",
    allocation.SCREENED_OUT: (
        "Your qualification answers were below this study's pass mark, so it has no more work for you."
    ),
    OWN_WORK_OPEN: "You still have units of your own to judge: finish them, then ask again.",
}
# NOTHING_NEEDED in a fixed campaign: never, rather than not now.
FIXED_WORDS = "This campaign gives every unit a fixed number of graders, so there is no extra work."


@dataclass
class MoreWork:
    assignments: list[Assignment] = field(default_factory=list)
    reason: str | None = None  # the allocation's reason code (a key of REASON_WORDS) when nothing was added

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
        served = _extra_explained(grader=grader, campaign=campaign)
        if served.assignment is None:
            if not result.assignments:
                result.reason = served.reason
            break
        result.assignments.append(served.assignment)
    return result


def reason_message(*, campaign: Campaign, reason: str) -> str:
    """An allocation reason code in the grader's words."""
    if reason == allocation.NOTHING_NEEDED and campaign.policy == Policy.FIXED:
        return FIXED_WORDS
    return REASON_WORDS[reason].format(max_overlap=campaign.max_overlap)


def _extra_explained(*, grader: AbstractBaseUser, campaign: Campaign) -> allocation.NextResult:
    """One extra unit leased to the grader, or none and why. With open work of their own (a stale
    page, a repeat just added) the next API would serve that work: when nothing extra is left, that
    is the reason."""
    served = allocation.assignment_extra_explained(grader=grader, campaign=campaign)
    if (
        served.assignment is None
        and Assignment.objects.filter(campaign=campaign, grader=grader, status=AssignmentStatus.OPEN).exists()
    ):
        return allocation.NextResult(None, OWN_WORK_OPEN)
    return served
