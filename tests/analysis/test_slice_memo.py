"""A run takes the sums of the slices whose rows did not change from the run before, and gives what
computing every slice gives, to the last bit (analysis/services/slice_memo.py, docs/analysis.md
"Reusing slices")."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from analysis.metrics import KeptSums
from analysis.reports.serialize import jsonable
from analysis.services import slice_memo
from analysis.services.judgments import StoredJudgments
from analysis.services.sections.agreement import agreement, fine_within_broad
from analysis.services.sections.graders_queries import graders, queries
from analysis.services.shards import part_dumps, part_loads, parts_behaviour, shard_compute, shard_plan
from analysis.services.slice_memo import SliceMemo, decoded, encoded
from analysis.services.values import value_spec
from grading.models import Judgment, Unit
from grading.models.choices import Scheme
from tests.factories import make_campaign, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]
ROWS = 7  # a slice's rows: small, so that the campaign below is cut into many slices


@pytest.fixture
def campaign(judged_campaign):
    """A BROAD+FINE campaign of three graders (``conftest.judged_campaign``)."""
    return judged_campaign


def _parts(campaign, per_shard=7):
    spans = shard_plan(campaign_id=campaign.pk, per_shard=per_shard)
    made = [shard_compute(campaign_id=campaign.pk, span=s, excluded=set(), tolerance=0.5) for s in spans]
    return [part_loads(part_dumps(p), judgments=False) for p in made]


def _sections(parts, spec, memo=None, excluded=frozenset()):
    judgments = StoredJudgments(parts, spec, rows=ROWS, excluded=set(excluded))
    units = pd.DataFrame(columns=["unit", "query", "n"])
    behaviour = parts_behaviour(copy.deepcopy(parts))  # it lets go of the parts' own
    return jsonable(
        {
            "agreement": agreement(judgments, spec, rng=np.random.default_rng(5), n_boot=20, confidence=0.9, memo=memo),
            "fine_within_broad": fine_within_broad(judgments, spec, memo),
            "graders": graders(judgments, spec, behaviour, {}, memo),
            "queries": queries(judgments, spec, units, {}, memo),
        }
    )


def _lent(memo: SliceMemo) -> SliceMemo:
    """The memo of the next run, lent what ``memo``'s run kept."""
    return SliceMemo(KeptSums(before=dict(memo.store.kept)))


def test_a_run_takes_the_slices_that_did_not_change_and_gives_what_computing_all_gives(campaign):
    spec = value_spec(campaign)
    parts = _parts(campaign)
    slices = len(StoredJudgments(parts, spec, rows=ROWS).slice_keys(SliceMemo()))
    assert slices > 3
    expected = _sections(parts, spec)

    first = SliceMemo()
    assert _sections(parts, spec, first) == expected
    assert (first.taken, first.computed) == (0, 4 * slices)  # four sections, every slice computed

    again = _lent(first)
    assert _sections(_parts(campaign), spec, again) == expected  # the parts read again: the same rows
    assert (again.taken, again.computed) == (4 * slices, 0)

    judgment = Judgment.objects.filter(campaign=campaign).order_by("unit_id").last()
    Judgment.objects.filter(pk=judgment.pk).update(broad="NS" if judgment.broad != "NS" else "VS")
    changed = _parts(campaign)
    after = _lent(again)
    got = _sections(changed, spec, after)
    assert got == _sections(changed, spec) and got != expected
    assert (after.taken, after.computed) == (4 * (slices - 1), 4)  # only the last unit's slice, per section
    assert (after.slices, after.slices_reused, after.read) == (slices, slices - 1, {slices - 1})


def test_fine_beyond_a_byte_of_tenths_is_figured_from_every_value_taken_or_not(campaign):
    """FINE's counts per tenth are kept per slice; a score no byte of tenths holds (30.5: the
    database refuses it, a part made from a ratings file need not) makes FINE within BROAD read
    every slice again, as without kept counts, and its figures are those of computing every slice."""
    spec = value_spec(campaign)
    first = SliceMemo()
    _sections(_parts(campaign), spec, first)
    spans = shard_plan(campaign_id=campaign.pk, per_shard=7)
    made = [shard_compute(campaign_id=campaign.pk, span=s, excluded=set(), tolerance=0.5) for s in spans]
    last = made[-1].judgments
    last.loc[last.index[last["fine"].notna()][-1], "fine"] = 30.5
    parts = [part_loads(part_dumps(p), judgments=False) for p in made]
    plain = fine_within_broad(StoredJudgments(parts, spec, rows=ROWS), spec)
    lent = _lent(first)
    assert fine_within_broad(StoredJudgments(parts, spec, rows=ROWS), spec, lent) == plain
    assert max(row["max"] for row in plain) == 30.5
    assert lent.taken == lent.slices - 1 and lent.computed == 1  # the kept counts taken, then every slice read


def test_a_new_graders_part_changes_only_the_slices_of_the_units_they_judged(campaign):
    spec = value_spec(campaign)
    before = StoredJudgments(_parts(campaign, 1), spec, rows=ROWS)  # a part per grader
    memo = SliceMemo()
    keys = before.slice_keys(memo)
    unit = Unit.objects.filter(campaign=campaign).order_by("pk").first()
    Judgment.objects.create(campaign=campaign, grader=make_user(), unit=unit, broad="VS", fine=7)
    after = StoredJudgments(_parts(campaign, 1), spec, rows=ROWS)
    assert len(after.parts) == len(before.parts) + 1
    lent = _lent(memo)
    changed = [i for i, (a, b) in enumerate(zip(keys, after.slice_keys(lent), strict=True)) if a != b]
    assert changed == [0]  # the first unit's slice alone
    # the old parts' digests were lent, the new part's made: the next run is lent all of them
    assert sum(1 for k in lent.store.kept if k not in lent.store.before) == 1


@pytest.mark.parametrize("scheme", [Scheme.BROAD_FINE, Scheme.CATEGORICAL, Scheme.NUMERIC])
def test_campaigns_without_queries_and_of_other_schemes_take_what_did_not_change(scheme):
    campaign = make_campaign(scheme=scheme, n_queries=0, n_candidates=12, graders=3, overlap=3)
    spec = value_spec(campaign)
    ratings = [Judgment(campaign=campaign, grader=a.grader, unit=a.unit) for a in campaign.assignments.all()]
    for i, judgment in enumerate(ratings):
        if scheme == Scheme.BROAD_FINE:
            judgment.broad, judgment.fine = ["NS", "SS", "VS"][i % 3], i % 11
        elif scheme == Scheme.CATEGORICAL:
            judgment.label = spec.categories[i % len(spec.categories)]
        else:
            judgment.score = float(i % 7)
    Judgment.objects.bulk_create(ratings)
    first = SliceMemo()
    expected = _sections(_parts(campaign), spec)
    assert _sections(_parts(campaign), spec, first) == expected and first.slices > 1
    again = _lent(first)
    assert _sections(_parts(campaign), spec, again) == expected
    assert again.slices_reused == again.slices


def test_graders_left_out_change_every_slice_key(campaign):
    spec = value_spec(campaign)
    parts = _parts(campaign)
    memo = SliceMemo()
    _sections(parts, spec, memo)
    grader = int(Judgment.objects.filter(campaign=campaign).values_list("grader_id", flat=True).first())
    without = _lent(memo)
    assert _sections(parts, spec, without, excluded={grader}) == _sections(parts, spec, excluded={grader})
    assert without.taken == 0


def test_keys_depend_on_the_rows_not_on_how_the_graders_are_split_into_parts(campaign):
    spec = value_spec(campaign)
    one = StoredJudgments(_parts(campaign, 7), spec, rows=ROWS).slice_keys(SliceMemo())
    same = StoredJudgments(_parts(campaign, 7), spec, rows=ROWS).slice_keys(SliceMemo())
    other = StoredJudgments(_parts(campaign, 10_000), spec, rows=ROWS).slice_keys(SliceMemo())
    assert one == same and len(set(one)) == len(one)
    assert len(other) == len(one) and not set(other) & set(one)  # other parts: computed again, never mistaken


def test_parts_held_as_frames_have_no_keys(campaign):
    spec = value_spec(campaign)
    parts = [shard_compute(campaign_id=campaign.pk, span=(None, None), excluded=set(), tolerance=0.5)]
    assert StoredJudgments(parts, spec, rows=ROWS).slice_keys(SliceMemo()) is None
    memo = SliceMemo()
    assert _sections(parts, spec, memo) == _sections(parts, spec)
    assert (memo.taken, memo.computed, memo.store.kept) == (0, 0, {})


def test_only_gives_the_slices_asked_for_from_the_parts_and_from_the_spill(campaign):
    spec = value_spec(campaign)
    every = list(StoredJudgments(_parts(campaign), spec, rows=ROWS).chunks(["grader", "cat"]))
    judgments = StoredJudgments(_parts(campaign), spec, rows=ROWS)
    for source in ("the parts", "the spill"):
        some = list(judgments.chunks(["grader", "cat"], only=[1, 3]))
        assert len(some) == 2, source
        for got, want in zip(some, [every[1], every[3]], strict=True):
            pd.testing.assert_frame_equal(got, want)
        assert judgments._spill is not None and judgments._spill.complete  # the first pass wrote every slice
    with pytest.raises(ValueError, match="in order"):
        list(StoredJudgments(_parts(campaign), spec, rows=ROWS).chunks(["grader"], only=[3, 1]))


def test_pieces_come_back_as_they_were_kept():
    frames = (
        pd.DataFrame({"n": np.array([1, 2], dtype=np.int64), "x": [0.1, np.nan]}, index=pd.Index([3, 9], name="g")),
        None,
        pd.DataFrame({"a": [1.0]}, index=pd.Index([2.5])),
        pd.DataFrame({"count_0": np.array([3], dtype=np.uint8), "units": [7]}),  # a range index
    )
    back = decoded(encoded(frames))
    assert back[1] is None
    for got, want in zip((back[0], back[2], back[3]), (frames[0], frames[2], frames[3]), strict=True):
        pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert decoded(encoded(())) == ()


def test_keys_differ_by_what_they_digest_and_never_look_like_the_bootstraps():
    keys = {slice_memo.key("a", b"b"), slice_memo.key("ab"), slice_memo.key("a", "b2"), slice_memo.key("b", b"a")}
    assert len(keys) == 4
    assert all(k.startswith(slice_memo.KEY_PREFIX) and len(k) == 32 for k in keys)
