"""The one way out of grading (docs/design.md §3): after judgments commit, schedule an automatic
analysis; for the organizer's home page, read the latest analyses' headline.

Each hook imports its target when called, not when grading is imported: importing grading never
loads `analysis`, and `tests/test_layers.py` checks that no other grading module reaches it.
"""

from __future__ import annotations


def judgments_changed(campaign_id: int) -> None:
    """New grading events were committed for a campaign: schedule a (debounced) automatic analysis."""
    from analysis.scheduling import schedule_auto_run

    schedule_auto_run(campaign_id=campaign_id)


def runs_headline(*, campaign_ids: list[int]) -> dict[int, dict]:
    """The latest analysis of each campaign at a glance (agreement, a failed run) for the home page."""
    from analysis.headlines import runs_headline

    return runs_headline(campaign_ids=campaign_ids)
