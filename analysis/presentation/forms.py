"""Forms of the report page (rendered next to the section they change)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet

from analysis.run_evaluation import DEFAULT_MEASURES
from grading.forms import MultipleFileField

AGGREGATE_CHOICES = [("mean", "mean"), ("median", "median"), ("majority", "majority")]
MEASURE_CHOICES = [("std", "std"), ("dif", "range (dif)"), ("entropy", "entropy")]


class SystemEvaluationForm(forms.Form):
    """How uploaded system scores are evaluated: the ground truth, the confusability measure, and the
    threshold of the low-confusability subset (empty: the median of the measure)."""

    aggregate = forms.ChoiceField(choices=AGGREGATE_CHOICES, label="Ground truth", initial="mean")
    measure = forms.ChoiceField(choices=MEASURE_CHOICES, label="Confusability", initial="std")
    threshold = forms.FloatField(
        required=False,
        min_value=0,
        label="Low-confusability threshold",
        help_text="units with a measure at or below it; empty = the median",
    )


class InstrumentLinksForm(forms.Form):
    """The campaigns that measure this one as an instrument (choices: campaigns the user may see)."""

    sibling_campaign = forms.ModelChoiceField(
        queryset=None, required=False, label="Sibling campaign (same units)", empty_label="none"
    )
    pairwise_campaign = forms.ModelChoiceField(
        queryset=None, required=False, label="Pairwise campaign (resolution)", empty_label="none"
    )

    def __init__(self, *args: Any, campaigns: QuerySet, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["sibling_campaign"].queryset = campaigns
        self.fields["pairwise_campaign"].queryset = campaigns


class RunsEvaluationForm(forms.Form):
    """TREC run files scored against the latest analysis's ground truth (analysis/run_evaluation.py)."""

    runs = MultipleFileField(
        label="Run files (TREC)",
        help_text="Several at once: one run per file, lines 'qid Q0 docid rank score tag'.",
    )
    measures = forms.CharField(
        initial=DEFAULT_MEASURES,
        label="Measures",
        help_text="ir-measures names separated by spaces, e.g. nDCG@10 P@5 AP RBP(p=0.8).",
    )
    confusability = forms.ChoiceField(
        choices=MEASURE_CHOICES,
        initial="std",
        required=False,  # a script posting runs and measures alone gets the std
        label="Confusability",
        help_text="How a judged document's disagreement is measured: the std, range or entropy of its judgments.",
    )
    low_threshold = forms.FloatField(
        required=False,
        min_value=0,
        label="Low-confusability threshold",
        help_text="Topics at or below it; empty = the median over each run's topics.",
    )
