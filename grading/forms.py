"""Forms of the organizer pages. They check the shape of the input; the services check the rest."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.text import slugify

from grading.models.choices import CampaignStatus, Policy, Role, Scheme

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


class CampaignFileForm(forms.Form):
    file = forms.FileField(
        label="Campaign file (JSON)", help_text='The format of import_campaign (README, "Campaign files").'
    )
    media = forms.FileField(
        label="Media (zip)",
        required=False,
        help_text='The files that the campaign file names under "media", paths as in the file.',
    )


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


class CampaignItemsForm(CampaignSettingsFields):
    items = forms.FileField(
        label="Items (CSV)",
        required=False,
        help_text="One row per candidate (or per query–candidate–system): columns query, query_title, "
        "query_kind, query_text, query_media, candidate, candidate_kind, candidate_text, "
        "candidate_media, candidate_url, system, rank.",
    )
    media = forms.FileField(
        label="Media (zip)", required=False, help_text="The files named in the query_media and candidate_media columns."
    )


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
