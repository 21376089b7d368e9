"""Gold units (docs/design.md §5.6, "Hidden units"): units whose answer the organizer sets. Graders
are served them like any other unit and never told; their judgments of them measure each grader's
accuracy (or absolute error) and are left out of ground truth and agreement.

Setting and removing a gold answer are events of their own types by the organizer (``gold_set``,
``gold_removed``), appended in the transaction that changes the answer, and kept apart from grader
judgments as adjudications are."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from grading.errors import NotAllowed, NotFound
from grading.models import Campaign, GoldAnswer, Unit
from grading.models.choices import EventType
from grading.services.adjudication import can_adjudicate, organizer_event_record, unit_value_checked
from grading.services.audit import audit_record


def answer_scores(answers: Any, references: Any, *, numeric: bool) -> np.ndarray:
    """§5.6's score of each answer against its reference (the gold answer, or a repeat's first
    answer): 1.0 when equal and 0.0 when not, compared as text (a category, a label, a verdict); on a
    numeric scale, the absolute difference (NaN where either is not a number). The one scoring of
    hidden units: the report's (analysis.services.sections.hidden_units) and a crowd participant's
    qualification (grading.services.qualification) both use it.

    Parameters
    ----------
    answers, references : sequences of the same length n.

    Returns
    -------
    float array of shape (n,).
    """
    answers, references = pd.Series(list(answers), dtype=object), pd.Series(list(references), dtype=object)
    if len(answers) != len(references):
        raise ValueError(f"`answers` has {len(answers)} values but `references` has {len(references)}.")
    if numeric:
        diff = pd.to_numeric(answers, errors="coerce") - pd.to_numeric(references, errors="coerce")
        return np.abs(diff.to_numpy(dtype=float))
    return (answers.astype(str).to_numpy() == references.astype(str).to_numpy()).astype(float)


def _unit_of(campaign: Campaign, external_id: str) -> Unit:
    external_id = (external_id or "").strip()
    unit = Unit.objects.filter(campaign=campaign, external_id=external_id).select_related("campaign").first()
    if unit is None:
        raise NotFound(f"campaign {campaign.pk} has no unit with id {external_id!r}.", field="unit", value=external_id)
    return unit


def _check_organizer(organizer: AbstractBaseUser, campaign: Campaign) -> None:
    if not can_adjudicate(user=organizer, campaign_id=campaign.pk):
        raise NotAllowed(
            f"only organizers of campaign {campaign.pk} set its gold units.", field="campaign", value=campaign.pk
        )


@transaction.atomic
def gold_set(*, organizer: AbstractBaseUser, campaign: Campaign, unit_external_id: str, value: Any) -> GoldAnswer:
    """Make a unit gold with the organizer's answer (or change its answer). The value is checked like
    a grader's: a BROAD category, a label, a verdict, or a number on the campaign's scale."""
    _check_organizer(organizer, campaign)
    unit = _unit_of(campaign, unit_external_id)
    parsed = unit_value_checked(unit=unit, value=value, purpose="set as gold")
    previous = GoldAnswer.objects.select_for_update().filter(unit=unit).values_list("value", flat=True).first()
    organizer_event_record(organizer=organizer, unit=unit, kind=EventType.GOLD_SET, payload={"value": parsed})
    gold, _ = GoldAnswer.objects.update_or_create(
        unit=unit, defaults={"campaign": campaign, "value": str(parsed), "organizer": organizer}
    )
    audit_record(
        actor=organizer,
        campaign=campaign,
        action="gold.set",
        target=unit.external_id,
        before=None if previous is None else {"value": previous},
        after={"value": gold.value},
    )
    return gold


@transaction.atomic
def gold_remove(*, organizer: AbstractBaseUser, campaign: Campaign, unit_external_id: str) -> None:
    """Make a gold unit ordinary again: its judgments count toward ground truth and agreement."""
    _check_organizer(organizer, campaign)
    unit = _unit_of(campaign, unit_external_id)
    gold = GoldAnswer.objects.select_for_update().filter(unit=unit).first()
    if gold is None:  # already ordinary (a form sent twice): nothing changes, so nothing is logged
        return
    organizer_event_record(
        organizer=organizer, unit=unit, kind=EventType.GOLD_REMOVED, payload={"previous": gold.value}
    )
    audit_record(
        actor=organizer, campaign=campaign, action="gold.removed", target=unit.external_id, before={"value": gold.value}
    )
    gold.delete()
