"""Property-based tests: whatever the input, the event readers and the campaign importer answer with
a value or a precise error, never anything else (hypothesis, bounded and seeded for CI)."""

import copy
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grading.api import serializers as s
from grading.api.base import validated
from grading.api.fast_events import event_input_fast
from grading.errors import InvalidValue
from grading.services.campaign_files import CampaignFileError, definition_check, definition_from_csv

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Derandomized (the same examples every run); `make fuzz` raises the count through FUZZ_EXAMPLES.
BOUNDED = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Any JSON value, including the ones storage refuses: NaN, huge integers, NULs and lone surrogates.
texts = st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0xFFFF), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=12,
)
EVENT_KEYS = ["id", "campaign", "unit", "query", "type", "payload", "client_ts", "seq", "session_id"]
GOOD_EVENT = {
    "id": "0b9c5f4e-3b8e-4a57-9d5e-2f1f7c8a9b10",
    "campaign": 3,
    "unit": 17,
    "type": "broad_set",
    "payload": {"value": "VS"},
    "client_ts": "2026-11-22T10:11:12+00:00",
    "seq": 4,
    "session_id": "abc",
}


@BOUNDED
@given(changes=st.dictionaries(st.sampled_from(EVENT_KEYS), json_values, max_size=4))
def test_an_event_is_read_or_refused_naming_a_field(changes):
    raw = {**GOOD_EVENT, **changes}
    fast = event_input_fast(raw)
    try:
        slow = validated(s.EventIn, raw)
    except InvalidValue as exc:
        assert fast is None
        assert exc.field and exc.field.split(".")[0].split("[")[0] in EVENT_KEYS + ["body"]
        json.dumps({"field": exc.field, "value": exc.value}).encode("utf-8")  # the error itself can be sent
        return
    assert slow["campaign"] >= 1 and slow["client_ts"].tzinfo is not None


def example_definition() -> dict:
    return json.loads((EXAMPLES / "campaign.json").read_text())


def paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from paths(item, (*prefix, i))


PATHS = [p for p in paths(example_definition()) if p]


@BOUNDED
@given(replacements=st.lists(st.tuples(st.sampled_from(PATHS), json_values), min_size=1, max_size=3))
def test_a_definition_is_accepted_or_refused_with_a_campaign_file_error(replacements):
    definition = copy.deepcopy(example_definition())
    for path, value in replacements:
        target = definition
        try:
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue  # an earlier replacement removed this path
    try:
        plan = definition_check(definition, EXAMPLES)
    except CampaignFileError as exc:
        assert exc.where and exc.field
        exc.message.encode("utf-8")
        return
    assert plan["campaign"]["slug"] and all(len(c["id"]) <= 100 for c in plan["candidates"])


@BOUNDED
@given(body=st.binary(max_size=300) | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_a_csv_of_any_bytes_is_read_or_refused_with_a_campaign_file_error(tmp_path, body):
    path = tmp_path / "items.csv"
    path.write_bytes(b"query,candidate,candidate_text,system,rank\n" + body)
    try:
        definition = definition_from_csv(path, {"name": "n", "slug": "s", "scheme": "broad_fine", "status": "draft"})
        definition_check(definition, tmp_path)
    except CampaignFileError as exc:
        assert exc.where.startswith(("line ", "whole file", "top level", "candidates", "queries", "units", "campaign"))


@pytest.mark.django_db
@BOUNDED
@given(body=st.lists(st.dictionaries(st.sampled_from(EVENT_KEYS), json_values, max_size=5), max_size=3))
def test_the_events_endpoint_never_answers_500(body, fast_grader):
    campaign, api = fast_grader
    events = [{**GOOD_EVENT, "campaign": campaign.pk, **changes} for changes in body]
    text = json.dumps(events if len(events) != 1 else events[0]).encode("utf-8", "surrogatepass")
    response = api.post("/api/events/", text, content_type="application/json")
    assert response.status_code < 500, response.content


@pytest.fixture
def fast_grader():
    from tests.factories import make_campaign
    from tests.grading.api_helpers import client_for, graders_of

    campaign = make_campaign(graders=1, n_queries=1, n_candidates=2)
    return campaign, client_for(graders_of(campaign)[0])
