"""Handing a finished run's grader model to allocation (docs/design.md §5.6).

The `uncertainty` policy chooses units with each grader's Dawid–Skene confusion matrix, which the
analysis run fits. A run computes and stores; once its result is stored, this small write gives the
fitted model to allocation. Allocation state itself is rebuilt where work is taken, never in a run.
"""

from __future__ import annotations

import logging
from typing import Any

from grading.services.allocation_state import allocation_model_set

logger = logging.getLogger(__name__)


def grader_model_hand_over(*, campaign_id: int, model: dict[str, Any]) -> bool:
    """Give allocation the Dawid–Skene fit of a stored run's `model` section. Returns whether there
    was one to give. A failure is logged, never raised: the run has already succeeded."""
    ds = (model or {}).get("dawid_skene")
    if not ds:
        return False
    try:
        allocation_model_set(
            campaign_id=campaign_id,
            categories=ds["categories"],
            priors=ds["priors"],
            confusion_by_grader={g["grader"]: g["confusion"] for g in ds["graders"]},
        )
    except Exception:  # the run's result stands; the next run hands its model over again
        logger.exception("campaign %s: the grader model could not be handed to allocation", campaign_id)
        return False
    return True
