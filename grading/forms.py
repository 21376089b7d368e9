"""Forms of the organizer pages. They check the shape of the input; the services check the rest."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat
from django.utils.text import slugify

from grading.models.choices import CampaignStatus, Policy, Role, Scheme
from grading.services.policy_params import EXCLUSION_SCHEMES

SCHEME_PARAMS_HELP = (
    'JSON. numeric: {"min": 1, "max": 5, "step": 1}; categorical: {"labels": ["bad", "ok", "good"], "ordered": true}; '
    'pairwise: {"attribute": "similar"}; broad_fine and ordering: {} (leave empty).'
)


class JSONObjectField(forms.CharField):
    def to_python(self, value: Any) -> dict[str, Any]:
        value = super().to_python(value)
        if not value.strip():
            return {}
        try:
            data = json.loads(value)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc.msg} at character {exc.pos}") from None
        if not isinstance(data, dict):
            raise forms.ValidationError('must be a JSON object, e.g. {"min": 1, "max": 5}')
        return data


class LimitedFileField(forms.FileField):
    """A file no larger than the setting `limit` names (read when the form is made, so that it can be
    configured). The page checks the size before sending (data-max-bytes); the form checks it again."""

    def __init__(self, *, limit: str, **kwargs: Any) -> None:
        self.limit = limit
        super().__init__(**kwargs)

    def validate(self, value: Any) -> None:
        super().validate(value)
        most = getattr(settings, self.limit)
        if value and value.size > most:
            raise forms.ValidationError(
                f"{value.name} is {_megabytes(value.size)}; this file may be at most {_megabytes(most)} "
                f"(the server's {self.limit} setting). Nothing was uploaded."
            )


def _megabytes(size: int) -> str:
    return filesizeformat(size).replace("\xa0", " ")


class _LimitedFiles:
    """Tells each LimitedFileField's input its limit, for the page's check before sending."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        for field in self.fields.values():  # type: ignore[attr-defined]
            if isinstance(field, LimitedFileField):
                most = getattr(settings, field.limit)
                field.widget.attrs.update({"data-max-bytes": most, "data-max-text": _megabytes(most)})


class CampaignFileForm(_LimitedFiles, forms.Form):
    file = LimitedFileField(
        limit="IMPORT_MAX_BYTES",
        label="Campaign file (JSON)",
        help_text='The format of import_campaign (README, "Campaign files").',
    )
    media = LimitedFileField(
        limit="MEDIA_ZIP_MAX_BYTES",
        label="Media (zip)",
        required=False,
        help_text='The files that the campaign file names under "media", paths as in the file.',
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Its own ids: the items form on the same page has a "media" field too (one id, one element).
        kwargs.setdefault("auto_id", "id_upload_%s")
        super().__init__(*args, **kwargs)


class CampaignSettingsFields(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(
        max_length=80, required=False, help_text="A short id for URLs and files; made from the name if empty."
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    scheme = forms.ChoiceField(choices=Scheme.choices)
    scheme_params = JSONObjectField(
        required=False, label="Scheme parameters", help_text=SCHEME_PARAMS_HELP, widget=forms.TextInput()
    )
    guidelines = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}),
        required=False,
        help_text="What graders read before they start. Editing it later makes a new version.",
    )
    initial_overlap = forms.IntegerField(min_value=1, initial=2, help_text="Graders per unit to begin with.")
    max_overlap = forms.IntegerField(
        min_value=1, initial=5, help_text="Most graders a unit can get from adaptive allocation."
    )
    policy = forms.ChoiceField(
        choices=Policy.choices, help_text='How extra judgments are allocated (README, "Adaptive allocation").'
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("name") and not data.get("slug"):
            data["slug"] = slugify(data["name"])[:80]
        return data

    def campaign_fields(self) -> dict[str, Any]:
        d = self.cleaned_data
        return {
            "name": d["name"],
            "slug": d["slug"],
            "scheme": d["scheme"],
            "scheme_params": d["scheme_params"],
            "description": d["description"],
            "guidelines": d["guidelines"],
            "status": CampaignStatus.DRAFT,
            "initial_overlap": d["initial_overlap"],
            "max_overlap": d["max_overlap"],
            "policy": d["policy"],
        }


class CampaignItemsForm(_LimitedFiles, CampaignSettingsFields):
    items = LimitedFileField(
        limit="IMPORT_MAX_BYTES",
        label="Items (CSV)",
        required=False,
        help_text="One row per candidate (or per query–candidate–system): columns query, query_title, "
        "query_kind, query_text, query_media, candidate, candidate_kind, candidate_text, "
        "candidate_media, candidate_url, system, rank.",
    )
    media = LimitedFileField(
        limit="MEDIA_ZIP_MAX_BYTES",
        label="Media (zip)",
        required=False,
        help_text="The files named in the query_media and candidate_media columns.",
    )


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files from one input (Django's documented pattern): the cleaned value is a list."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(d, initial) for d in data]
        return [single(data, initial)]


class CampaignRunsForm(CampaignSettingsFields):
    """A campaign pooled from TREC runs (grading/services/trec_runs.py); prefixed, as it shares the page."""

    scheme = forms.ChoiceField(
        choices=[(Scheme.BROAD_FINE, "BROAD/FINE"), (Scheme.NUMERIC, "Numeric")],
        help_text="How graders rate each topic–document pair.",
    )
    runs = MultipleFileField(
        label="Run files (TREC)",
        help_text="Choose several at once: one run per file, lines 'qid Q0 docid rank score tag' "
        "(any white space between fields). Each run's tag becomes a system.",
    )
    depth = forms.IntegerField(
        min_value=1, initial=10, label="Pool depth (K)", help_text="Each run's first K documents of every topic."
    )
    topics = forms.FileField(
        label="Topics",
        required=False,
        help_text="One topic per line: the id, a tab, the text. Without it, a topic's text is its id.",
    )
    docs = forms.FileField(
        label="Documents",
        required=False,
        help_text='JSON lines, {"id": …, "text": …} or {"id": …, "url": …}. Without it, a document\'s text is its id.',
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", "runs")
        super().__init__(*args, **kwargs)
        for name in ("policy", "max_overlap"):
            self.fields.pop(name)

    def campaign_fields(self) -> dict[str, Any]:
        d = self.cleaned_data
        d.setdefault("policy", Policy.FIXED)
        d.setdefault("max_overlap", max(5, d["initial_overlap"]))
        return super().campaign_fields()


class CampaignEditForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    scheme_params = JSONObjectField(
        required=False, label="Scheme parameters", help_text=SCHEME_PARAMS_HELP, widget=forms.TextInput()
    )
    guidelines = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        required=False,
        help_text="Saving changed text makes a new version; graders are shown what changed.",
    )
    initial_overlap = forms.IntegerField(min_value=1)
    max_overlap = forms.IntegerField(min_value=1)
    budget = forms.IntegerField(min_value=0, required=False, help_text="Total judgments allowed; empty = unlimited.")
    policy = forms.ChoiceField(choices=Policy.choices)
    # Automatic exclusion (docs/design.md §5.6, "Excluded graders"): kept in policy_params under
    # these names; offered for schemes whose judgments are categories only.
    exclude_gold_below = forms.FloatField(
        min_value=0,
        max_value=1,
        required=False,
        label="Exclude graders whose gold accuracy is below",
        help_text="A share from 0 to 1, e.g. 0.6: a grader who got fewer than 60% of their gold units right is "
        "excluded from the analysis when the next analysis runs (exactly 0.6 is kept). Empty: never automatically.",
    )
    exclude_reliability_below = forms.FloatField(
        min_value=0,
        max_value=1,
        required=False,
        label="Exclude graders whose model reliability is below",
        help_text="A share from 0 to 1: the grader's accuracy as the grader model (Dawid–Skene) estimates it from "
        "how their judgments agree with everyone's, shown in the report. Empty: never automatically.",
    )
    exclude_min_judgments = forms.IntegerField(
        min_value=1,
        required=False,
        label="Judge a grader by these thresholds only after",
        help_text="This many gold judgments (for gold accuracy) or judgments (for model reliability); fewer are too "
        "few to judge anyone by. Empty: 5. An excluded grader keeps grading and can be included again on the "
        "Members page; the thresholds then leave them alone.",
    )

    def __init__(self, *args: Any, scheme: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if scheme not in EXCLUSION_SCHEMES:  # no gold accuracy or grader model to compare with
            for name in EXCLUSION_FIELDS:
                del self.fields[name]


EXCLUSION_FIELDS = ("exclude_gold_below", "exclude_reliability_below", "exclude_min_judgments")


class MembersForm(forms.Form):
    people = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        label="User names or e-mail addresses",
        help_text="One or many: separated by new lines, commas or spaces. Accounts that do not "
        "exist yet are created with a one-time link to set a password.",
    )
    role = forms.ChoiceField(choices=Role.choices, initial=Role.GRADER)


class OrganizerForm(forms.Form):
    username = forms.CharField(
        max_length=150,
        label="User name",
        help_text="The person's user name on this site. To add someone new, invite them to a campaign first, "
        "or create their account in the Django admin.",
    )


class JoinLinkForm(forms.Form):
    label = forms.CharField(
        max_length=100,
        required=False,
        help_text="For you: which recruitment this link is for (e.g. “Prolific, pilot”).",
    )
    completion_code = forms.CharField(
        max_length=64,
        help_text="The code the platform gave you for this study. Participants see it only once their work is done.",
    )
    max_participants = forms.IntegerField(
        min_value=1, max_value=100000, label="Participants", help_text="How many people may join through this link."
    )
    units_per_participant = forms.IntegerField(
        min_value=1,
        required=False,
        label="Units per participant",
        help_text="Each participant's share of the work (ordering campaigns: queries); empty: every unit.",
    )
    expires_at = forms.DateTimeField(
        required=False,
        label="Expires",
        help_text="After this moment nobody new may join (the server's time zone).",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )
    return_url = forms.CharField(
        max_length=500,
        required=False,
        label="Return address",
        help_text="Where participants go back to when done; {code} becomes the completion code. Prolific: "
        "https://app.prolific.com/submissions/complete?cc={code}",
    )
    pay_per_unit = forms.DecimalField(
        min_value=0,
        max_digits=8,
        decimal_places=2,
        required=False,
        label="Pay per unit rated",
        help_text="For the participants file's pay column; empty: none.",
    )
    pay_per_hour = forms.DecimalField(
        min_value=0,
        max_digits=8,
        decimal_places=2,
        required=False,
        label="Pay per hour of active time",
        help_text="Active time from the event log (an idle gap counts at most 5 minutes); empty: none.",
    )
    currency = forms.CharField(max_length=3, required=False, help_text="A three-letter code, e.g. GBP.")
    consent_text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        label="Consent text",
        help_text="Shown first; participants agree before they see the guidelines. Empty: no consent step.",
    )
    qualification_units = forms.IntegerField(
        min_value=1,
        max_value=100,
        required=False,
        label="Qualification units",
        help_text="Screening: this many of the campaign's gold units are given first, before the share. Empty: "
        "no qualification.",
    )
    qualification_pass_mark = forms.FloatField(
        min_value=0,
        required=False,
        label="Pass mark",
        help_text="How many qualification units must be answered right to go on (numeric scales: the largest "
        "mean absolute error that passes). Below it a participant is thanked, gets no more work and is excluded "
        "from the analysis.",
    )
    screen_out_code = forms.CharField(
        max_length=64,
        required=False,
        label="Screen-out code",
        help_text="Shown to participants below the pass mark (never to anyone else); letters, digits, _ or -.",
    )

    # The form's qualification fields, and the rule's fields they stand for (errors go next to them).
    QUALIFICATION_FIELDS = {
        "qualification_units": "units",
        "qualification_pass_mark": "pass_mark",
        "screen_out_code": "screen_out_code",
    }

    def clean(self) -> dict[str, Any]:
        """The three qualification fields become one rule, as the API takes it ({} when no units)."""
        data = super().clean()
        parts = {rule: data.pop(name, None) for name, rule in self.QUALIFICATION_FIELDS.items()}
        if parts["units"] is None:
            if parts["pass_mark"] is not None or parts["screen_out_code"]:
                self.add_error(
                    "qualification_units", "Give how many qualification units, or leave the pass mark and code empty."
                )
            data["qualification"] = {}
            return data
        if parts["pass_mark"] is None:
            self.add_error("qualification_pass_mark", "A qualification needs a pass mark.")
        data["qualification"] = {k: v for k, v in parts.items() if v not in (None, "")}
        return data
