"""import_campaign / export_campaign: atomic imports with precise errors, and a faithful round trip."""

import copy
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.models import (
    Assignment,
    Campaign,
    Candidate,
    CandidateProvenance,
    GuidelinesVersion,
    Query,
    Unit,
)
from grading.services.campaign_io import campaign_definition

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]


def counts() -> tuple[int, ...]:
    return tuple(
        m.objects.count()
        for m in (Campaign, Query, Candidate, CandidateProvenance, Unit, Assignment, GuidelinesVersion)
    )


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A writable copy of examples/ so tests can break it."""
    target = tmp_path / "examples"
    shutil.copytree(EXAMPLES, target)
    return target


def write(folder: Path, definition: dict) -> Path:
    path = folder / "broken.json"
    path.write_text(json.dumps(definition))
    return path


def test_the_example_imports_with_units_roles_and_assignments(example):
    call_command("import_campaign", str(example / "campaign.json"))
    campaign = Campaign.objects.get(slug="example-audio")
    assert (campaign.queries.count(), campaign.candidates.count(), campaign.units.count()) == (1, 3, 3)
    assert campaign.assignments.count() == 3 * 2  # initial overlap 2
    assert campaign.guidelines_version == 1
    assert campaign.candidates.get(external_id="c-a").provenance.count() == 2
    assert all(q.media_file.name.endswith(".wav") for q in campaign.queries.all())


def test_the_csv_form_imports_with_a_media_folder(example):
    call_command("import_campaign", str(example / "items.csv"), name="CSV", slug="csv", scheme="broad_fine")
    campaign = Campaign.objects.get(slug="csv")
    assert (
        campaign.queries.count(),
        campaign.candidates.count(),
        campaign.units.count(),
        campaign.systems.count(),
    ) == (1, 3, 3, 2)


def break_it(definition: dict, case: str) -> dict:
    d = copy.deepcopy(definition)
    if case == "missing field":
        del d["campaign"]["name"]
    elif case == "duplicate id":
        d["candidates"].append(copy.deepcopy(d["candidates"][0]))
    elif case == "bad scheme parameter":
        d["campaign"]["scheme_params"] = {"fine_bands": {"NS": [0, 4], "SS": [3, 8], "VS": [6, 11]}}
    elif case == "unknown media file":
        d["candidates"][1]["media"] = "media/missing.wav"
    elif case == "wrong type":
        d["campaign"]["initial_overlap"] = "two"
    elif case == "repeat share too large":
        d["campaign"]["policy_params"] = {"repeat_share": 0.9}
    elif case == "threshold not a number":
        d["campaign"]["policy_params"] = {"threshold": "high"}
    elif case == "exclusion threshold out of range":
        d["campaign"]["policy_params"] = {"exclude_gold_below": 60}
    elif case == "unknown system":
        d["candidates"][2]["provenance"][0]["system"] = "system-z"
    return d


@pytest.mark.parametrize(
    "case,message",
    [
        ("missing field", "campaign, field 'name', value None"),
        ("duplicate id", "candidates[3], field 'id', value 'c-a': duplicate id"),
        ("bad scheme parameter", "campaign, field 'scheme_params.fine_bands.VS'"),
        ("unknown media file", "candidates[1], field 'media', value 'media/missing.wav': no such file"),
        ("wrong type", "campaign, field 'initial_overlap', value 'two'"),
        ("unknown system", "candidates[2].provenance[0], field 'system', value 'system-z'"),
        (
            "repeat share too large",
            "campaign, field 'policy_params.repeat_share', value 0.9: must be a number from 0 to 0.5",
        ),
        (
            "threshold not a number",
            "campaign, field 'policy_params.threshold', value 'high': must be a number of at least 0",
        ),
        (
            "exclusion threshold out of range",
            "campaign, field 'policy_params.exclude_gold_below', value 60: must be a number from 0 to 1",
        ),
    ],
)
def test_a_malformed_file_names_row_field_and_value_and_stores_nothing(example, case, message):
    good = json.loads((example / "campaign.json").read_text())
    before = counts()
    with pytest.raises(CommandError) as err:
        call_command("import_campaign", str(write(example, break_it(good, case))))
    assert message in str(err.value)
    assert err.value.returncode == 2
    assert counts() == before


def test_a_csv_row_error_names_the_line(example):
    bad = example / "bad.csv"
    bad.write_text(
        (example / "items.csv").read_text() + "q1,,audio,media/query-1.wav,c-d,audio,media/cand-d.wav,system-a,x\n"
    )
    with pytest.raises(CommandError, match=r"line 6, field 'rank', value 'x'"):
        call_command("import_campaign", str(bad), name="CSV", slug="csv")
    assert counts() == (0,) * 7


def test_invalid_json_is_reported_with_its_line(example):
    path = example / "broken.json"
    path.write_text('{\n "campaign": {\n  "name": oops\n }\n}')
    with pytest.raises(CommandError, match="line 3"):
        call_command("import_campaign", str(path))


def test_export_then_import_reproduces_the_campaign(example, tmp_path):
    call_command("import_campaign", str(example / "campaign.json"))
    original = Campaign.objects.get(slug="example-audio")
    call_command("export_campaign", "example-audio", output=str(tmp_path / "out"))
    exported = json.loads((tmp_path / "out" / "campaign.json").read_text())
    exported["campaign"]["slug"] = "example-audio-copy"
    (tmp_path / "out" / "campaign.json").write_text(json.dumps(exported))
    call_command("import_campaign", str(tmp_path / "out" / "campaign.json"))
    copy_ = Campaign.objects.get(slug="example-audio-copy")
    a, b = campaign_definition(original), campaign_definition(copy_)
    b["campaign"]["slug"] = a["campaign"]["slug"]
    assert a == b
    media_a = [c.media_file.read() for c in original.candidates.order_by("external_id")]
    media_b = [c.media_file.read() for c in copy_.candidates.order_by("external_id")]
    assert media_a == media_b
