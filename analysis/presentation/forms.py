"""Forms of the report page (rendered next to the section they change)."""
from __future__ import annotations

from django import forms

AGGREGATE_CHOICES = [("mean", "mean"), ("median", "median"), ("majority", "majority")]
MEASURE_CHOICES = [("std", "std"), ("dif", "range (dif)"), ("entropy", "entropy")]


class SystemEvaluationForm(forms.Form):
    """How uploaded system scores are evaluated: the ground truth, the confusability measure, and the
    threshold of the low-confusability subset (empty: the median of the measure)."""

    aggregate = forms.ChoiceField(choices=AGGREGATE_CHOICES, label="Ground truth", initial="mean")
    measure = forms.ChoiceField(choices=MEASURE_CHOICES, label="Confusability", initial="std")
    threshold = forms.FloatField(required=False, min_value=0, label="Low-confusability threshold",
                                 help_text="units with a measure at or below it; empty = the median")
