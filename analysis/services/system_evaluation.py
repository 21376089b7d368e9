"""Evaluating the uploaded system scores under the report page's settings (docs/design.md §5.7): the
organizer chooses the ground truth, the confusability measure and the threshold, and asks (a POST);
the evaluation is computed from the latest run's units and stored, and the page shows it."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from analysis.models import AnalysisRun, SystemEvaluation
from analysis.services.sections.systems import systems_reevaluate
from grading.errors import InvalidValue


def system_evaluation_create(
    *,
    run: AnalysisRun,
    aggregate: str,
    measure: str,
    threshold: float | None,
    user: AbstractBaseUser | None,
) -> SystemEvaluation:
    """The run's evaluation under these settings, computed and stored unless it already is.

    Raises InvalidValue when the run has no uploaded scores to evaluate, or a setting is unknown.
    """
    key = SystemEvaluation.key_of(aggregate=aggregate, measure=measure, threshold=threshold)
    stored = SystemEvaluation.objects.filter(run=run, key=key).first()
    if stored is not None:
        return stored
    try:
        result = systems_reevaluate(run=run, aggregate=aggregate, measure=measure, threshold=threshold)
    except ValueError as exc:
        raise InvalidValue(str(exc), field="aggregate", value=aggregate) from None
    uploaded = (result.get("systems") or {}).get("uploaded")
    if not uploaded:
        raise InvalidValue(
            f"analysis #{run.number or run.pk} has no uploaded system scores to evaluate.", field="run", value=run.pk
        )
    try:
        with transaction.atomic():
            return SystemEvaluation.objects.create(
                run=run,
                key=key,
                aggregate=aggregate,
                measure=measure,
                threshold=threshold,
                uploaded=uploaded,
                created_by=user,
            )
    except IntegrityError:  # the same evaluation, asked for twice at once
        return SystemEvaluation.objects.get(run=run, key=key)
