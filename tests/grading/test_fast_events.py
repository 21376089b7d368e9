"""The fast event reader agrees with the serializer on every event it accepts, and passes on the rest."""

from dataclasses import asdict

import pytest

from grading.api import serializers as s
from grading.api.fast_events import event_input_fast
from grading.api.views import _event_input

GOOD = {
    "id": "0b9c5f4e-3b8e-4a57-9d5e-2f1f7c8a9b10",
    "campaign": 3,
    "unit": 17,
    "type": "broad_set",
    "payload": {"value": "VS"},
    "client_ts": "2026-11-22T10:11:12.345678+00:00",
    "seq": 4,
    "session_id": "abc",
}


def serializer_reading(raw):
    serializer = s.EventIn(data=raw)
    return _event_input(serializer.validated_data) if serializer.is_valid() else None


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"unit": None, "query": 5, "type": "ordering_submitted", "payload": {"items": ["a", "b"]}},
        {"client_ts": "2026-11-22T10:11:12Z"},
        {"client_ts": "2026-11-22T12:11:12+02:00"},
        {"payload": {"value": 7.3}, "type": "fine_set"},
        {"seq": 0, "session_id": ""},
        {"extra": "ignored"},
        {"id": "0B9C5F4E-3B8E-4A57-9D5E-2F1F7C8A9B10"},
    ],
)
def test_a_well_formed_event_reads_the_same_both_ways(changes):
    raw = {**GOOD, **changes}
    fast = event_input_fast(raw)
    assert fast is not None
    assert asdict(fast) == asdict(serializer_reading(raw))


@pytest.mark.parametrize(
    "changes",
    [
        {"id": "not-a-uuid-at-all-but-36-characters!"},
        {"id": 12},
        {"campaign": "3"},
        {"campaign": True},
        {"campaign": 0},
        {"unit": 2**63},
        {"type": "nonsense"},
        {"payload": [1]},
        {"payload": {"v": float("nan")}},
        {"client_ts": "yesterday"},
        {"client_ts": "2026-11-22T10:11:12"},
        {"seq": -1},
        {"seq": 1.5},
        {"session_id": " padded "},
        {"session_id": "x" * 65},
        {"session_id": "a\x00b"},
    ],
)
def test_anything_else_is_left_to_the_serializer(changes):
    assert event_input_fast({**GOOD, **changes}) is None


def test_a_missing_field_is_left_to_the_serializer():
    for key in ("id", "campaign", "type", "client_ts"):
        assert event_input_fast({k: v for k, v in GOOD.items() if k != key}) is None
