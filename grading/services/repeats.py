"""Hidden repeats (docs/design.md §5.6, "Hidden units"): a share of each grader's work is a unit they
already judged, given back to them later as an ordinary assignment. Its answer is a RepeatAnswer,
never the grader's Judgment, and it counts toward neither ground truth nor agreement; the report
compares the two answers (test–retest).

The campaign's ``policy_params.repeat_share`` sets the share (0, the default, turns repeats off).
Once a grader has completed n ordinary units, they get a repeat while they have fewer than
floor(n × share); the unit is one they completed at least MIN_GAP completions ago, chosen at random
(seeded by campaign, grader and repeat count), and it is placed beyond the page they are working on.
"""

from __future__ import annotations

import math

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import F

from grading.models import Assignment, Campaign
from grading.models.choices import AssignmentSource, AssignmentStatus
from grading.selectors import UNITS_PER_PAGE, assignment_next_position
from grading.services.payloads import VALUE_FIELD
from grading.services.policy_params import policy_param

MIN_GAP = 10  # other units judged between a unit and its repeat
POOL = 200  # the repeat is drawn from this many of the grader's eligible units, most recent first
LOOK_AHEAD = 40  # open assignments read to find where the repeat goes


def repeat_share(campaign: Campaign) -> float:
    """policy_params.repeat_share when it is a number in [0, policy_params.MAX_REPEAT_SHARE], else 0 (repeats off)."""
    return float(policy_param(campaign=campaign, name="repeat_share", default=0))


def repeat_add_due(*, grader: AbstractBaseUser, campaign: Campaign) -> Assignment | None:
    """Give the grader a repeat if one is due (see the module's docstring); None otherwise.

    Called in the transaction that records the grader's judgments, after they are written.
    """
    share = repeat_share(campaign)
    if not share or campaign.scheme not in VALUE_FIELD:
        return None
    mine = Assignment.objects.filter(campaign=campaign, grader=grader, unit__isnull=False)
    done = mine.filter(repeat=False, status=AssignmentStatus.DONE)
    n_repeats = mine.filter(repeat=True).count()
    if n_repeats >= math.floor(done.count() * share):
        return None
    pool = list(
        done.exclude(unit_id__in=mine.filter(repeat=True).values("unit_id"))
        .filter(unit__gold__isnull=True)
        .order_by("-completed_at", "-pk")
        .values_list("unit_id", "query_id")[MIN_GAP : MIN_GAP + POOL]
    )
    if not pool:
        return None
    rng = np.random.default_rng([campaign.pk, grader.pk, n_repeats])
    unit_id, query_id = pool[int(rng.integers(len(pool)))]
    position = _place(grader, campaign)
    return Assignment.objects.create(
        campaign=campaign,
        grader=grader,
        unit_id=unit_id,
        query_id=query_id,
        source=AssignmentSource.INITIAL,
        position=position,
        repeat=True,
    )


def _place(grader: AbstractBaseUser, campaign: Campaign) -> int:
    """A position beyond the page the grader is on: before the first open unit of another query (or,
    without queries, a page further on); after everything when there is no such unit. Later
    assignments move one place down to make room."""
    mine = Assignment.objects.filter(campaign=campaign, grader=grader)
    ahead = list(
        mine.filter(status=AssignmentStatus.OPEN)
        .order_by("position", "pk")
        .values_list("position", "unit__query_id")[:LOOK_AHEAD]
    )
    target = None
    if ahead and ahead[0][1] is not None:
        target = next((pos for pos, query in ahead if query != ahead[0][1]), None)
    elif len(ahead) > UNITS_PER_PAGE:
        target = ahead[UNITS_PER_PAGE][0]
    if target is None:
        return assignment_next_position(grader=grader, campaign=campaign)
    mine.filter(position__gte=target).update(position=F("position") + 1)
    return target
