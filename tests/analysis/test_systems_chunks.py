"""The systems section and the instrument card read a slice of whole units at a time: through the shards'
parts (``StoredJudgments``, several parts, several slices) they equal the sections on the one frame of
every judgment, on a campaign with systems' provenance, uploaded per-unit system scores, a sibling and a
pairwise campaign; with missing FINE, an excluded grader, a grader with no scored unit, NULL queries."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from analysis import metrics as m
from analysis import selectors
from analysis.reports.serialize import jsonable
from analysis.services import values
from analysis.services.judgments import FrameJudgments, StoredJudgments
from analysis.services.sections import instrument
from analysis.services.sections.agreement import agreement_report
from analysis.services.sections.instrument import instrument_section
from analysis.services.sections.systems import SCALES, systems_section, unit_truth
from analysis.services.shards import part_dumps, part_loads, shard_compute, shard_plan
from analysis.services.values import value_spec, with_values
from grading.models import Assignment, Campaign, CampaignRole, CandidateProvenance, System, Unit
from grading.models.choices import Role, Scheme
from grading.services.exclusion import grader_exclude
from grading.services.instrument_links import campaign_set_instrument_links
from grading.services.system_scores import system_scores_import, system_scores_rows_from_csv
from tests.analysis.conftest import unit_places
from tests.factories import make_campaign, record

pytestmark = pytest.mark.django_db
SLICE_ROWS = 7  # a few units a slice: every section meets many slices


def _judge(campaign: Campaign, *, seed: int) -> None:
    """Every assignment judged around a per-unit truth; in BROAD/FINE one in six has no FINE."""
    rng = random.Random(seed)
    places = unit_places(campaign)
    for i, a in enumerate(Assignment.objects.filter(campaign=campaign).select_related("grader", "unit").order_by("pk")):
        truth = (a.unit.position * 7 + places[a.unit_id]) % 3
        level = min(2, max(0, truth + rng.choice([0, 0, 1, -1])))
        if campaign.scheme == Scheme.NUMERIC:
            record(
                a.grader, campaign, "score_set", {"value": min(10, max(0, 3 * level + rng.randint(0, 3)))}, unit=a.unit
            )
            continue
        record(a.grader, campaign, "broad_set", {"value": ["NS", "SS", "VS"][level]}, unit=a.unit)
        if i % 6 != 5:
            fine = round(min(10.0, max(0.0, 1.5 + 3.5 * level + rng.uniform(-1.5, 1.5))), 1)
            record(a.grader, campaign, "fine_set", {"value": fine}, unit=a.unit)


def _pairwise(organizer) -> Campaign:
    """Pairs of the candidates of the first two queries only (c0-*, c1-*), each with a neighbour."""
    pairwise = make_campaign(scheme=Scheme.PAIRWISE, n_queries=2, n_candidates=6, graders=3, organizer=organizer)
    units = list(Unit.objects.filter(campaign=pairwise).select_related("candidate").order_by("pk"))
    for i, unit in enumerate(units):
        unit.candidate_b = units[(i + 1) % len(units)].candidate
        unit.save(update_fields=["candidate_b"])
    rng = random.Random(2)
    for a in Assignment.objects.filter(campaign=pairwise).select_related("grader", "unit"):
        record(a.grader, pairwise, "pairwise_set", {"value": rng.choice(["A", "A", "B", "equal"])}, unit=a.unit)
    return pairwise


@pytest.fixture(params=[Scheme.BROAD_FINE, Scheme.NUMERIC])
def campaign(request, organizer) -> Campaign:
    """Four queries × six candidates judged by three of six graders each; system-b returned the first
    three candidates of each query, system-c the last three (system-a all); two systems' scores uploaded
    for the units the first grader did not judge; a sibling and a pairwise campaign linked."""
    scheme = request.param
    campaign = make_campaign(scheme=scheme, n_queries=4, n_candidates=6, graders=6, overlap=3, organizer=organizer)
    b, c = (System.objects.create(campaign=campaign, name=n) for n in ("system-b", "system-c"))
    for unit in Unit.objects.filter(campaign=campaign):
        CandidateProvenance.objects.create(
            candidate=unit.candidate, system=b if unit.position < 3 else c, query=unit.query, rank=unit.position % 3 + 1
        )
    _judge(campaign, seed=3)
    first = Assignment.objects.filter(campaign=campaign).order_by("grader_id").values_list("grader_id", flat=True)[0]
    theirs = set(Assignment.objects.filter(campaign=campaign, grader_id=first).values_list("unit_id", flat=True))
    rng = np.random.default_rng(0)
    lines = ["unit,system,score"]
    places = unit_places(campaign)
    for unit in Unit.objects.filter(campaign=campaign).exclude(pk__in=theirs).order_by("pk"):
        base = (unit.position * 7 + places[unit.pk]) % 3 * 3.5 + 1.5
        lines += [f"{unit.external_id},{s},{base + rng.normal(0, n):.3f}" for s, n in (("good", 0.5), ("noisy", 3))]
    system_scores_import(campaign=campaign, rows=system_scores_rows_from_csv("\n".join(lines) + "\n"))
    sibling = make_campaign(scheme=scheme, n_queries=4, n_candidates=6, graders=3, organizer=organizer)
    _judge(sibling, seed=9)
    pairwise = _pairwise(organizer) if scheme == Scheme.BROAD_FINE else None
    campaign_set_instrument_links(campaign=campaign, sibling=sibling, pairwise=pairwise, actor=None)
    return campaign


def _exclude_one(campaign: Campaign, organizer) -> int:
    role = CampaignRole.objects.filter(campaign=campaign, role=Role.GRADER).order_by("user_id").last()
    grader_exclude(campaign=campaign, role=role, reason="careless", actor=organizer)
    return role.user_id


def _frame(campaign: Campaign) -> pd.DataFrame:
    """Every judgment as one frame, as the combining step has it: one reading of every grader less the excluded."""
    excluded = selectors.excluded_grader_ids(campaign_id=campaign.pk)
    part = shard_compute(campaign_id=campaign.pk, span=(None, None), excluded=excluded, tolerance=0.5)
    return with_values(part.judgments, value_spec(campaign))


def _stored(campaign: Campaign) -> StoredJudgments:
    """The shards' parts of one grader each, as Parquet; the excluded graders left out after reading."""
    plan = shard_plan(campaign_id=campaign.pk, per_shard=1)
    parts = [
        part_loads(
            part_dumps(shard_compute(campaign_id=campaign.pk, span=span, excluded=set(), tolerance=0.5)),
            judgments=False,
        )
        for span in plan
    ]
    excluded = selectors.excluded_grader_ids(campaign_id=campaign.pk)
    return StoredJudgments(parts, value_spec(campaign), excluded=excluded)


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices of about ``SLICE_ROWS`` judgments, for the one frame and for the parts alike."""
    monkeypatch.setattr(values, "CHUNK_ROWS", SLICE_ROWS)  # StoredJudgments cuts its slices by it too


def _systems(campaign: Campaign, judgments, units: pd.DataFrame) -> dict:
    out = systems_section(
        judgments,
        value_spec(campaign),
        selectors.provenance_frame(campaign_id=campaign.pk),
        selectors.system_unit_scores_frame(campaign_id=campaign.pk),
        units,
        rng=np.random.default_rng(5),
        n_boot=50,
        confidence=0.9,
    )
    return jsonable(out)


def _instrument(campaign: Campaign, judgments) -> dict:
    return jsonable(instrument_section(campaign_id=campaign.pk, scheme=campaign.scheme, judgments=judgments))


@pytest.mark.parametrize("excluded", [False, True])
def test_the_sections_through_the_parts_equal_them_on_the_one_frame(campaign, organizer, excluded, request):
    if excluded:
        _exclude_one(campaign, organizer)
    frame = _frame(campaign)
    units = agreement_report(frame, value_spec(campaign), n_boot=20, confidence=0.9, seed=1)[1]
    systems, card = _systems(campaign, frame, units), _instrument(campaign, frame)  # one slice: as before
    assert systems["available"] and len(systems["per_system"]) == 3
    assert len(systems["uploaded"]["graders"]["per_system"]) == 2
    assert card["reproducibility"]["n_units"] == 24
    if campaign.scheme == Scheme.BROAD_FINE:
        assert card["resolution"]["n_pairs"] > 0
    request.getfixturevalue("small_slices")
    stored = _stored(campaign)
    assert len(stored.parts) > 2 and len(list(stored.chunks(["num"]))) > 5
    assert _systems(campaign, stored, units) == systems
    assert _systems(campaign, FrameJudgments(frame, value_spec(campaign)), units) == systems
    assert _instrument(campaign, stored) == card
    assert _instrument(campaign, frame) == card


def test_ground_truth_per_unit_is_the_same_series_slice_by_slice(campaign, small_slices):
    frame = _frame(campaign)
    spec = value_spec(campaign)
    whole = {}
    for scale in SCALES[campaign.scheme]:  # the means of every judgment at once, as the section had them
        key = scale["key"]
        values_ = frame["broad"].map({"NS": 0.0, "SS": 1.0, "VS": 2.0}) if key == "broad" else frame[key]
        kept = values_.notna()
        whole[key] = values_[kept].groupby(frame["unit"][kept]).mean()
    for judgments in (_stored(campaign), FrameJudgments(frame, spec)):
        truth = unit_truth(judgments, campaign.scheme)
        assert set(truth) == set(whole)
        for key, series in truth.items():
            assert series.equals(whole[key]) and series.name == whole[key].name
            assert series.index.name == "unit"


def test_per_grader_rho_reads_only_the_scored_units_yet_equals_it_from_every_judgment(campaign, small_slices):
    """The first grader judged no scored unit: kept as a grader without a ρ, as from every judgment."""
    frame = _frame(campaign)
    key = SCALES[campaign.scheme][0]["key"]
    uploaded = selectors.system_unit_scores_frame(campaign_id=campaign.pk)
    every = frame[["unit", "grader", key]].rename(columns={key: "value"}).dropna()
    comparison = m.system_comparison(every, uploaded[["system", "unit", "score"]])
    assert comparison.per_grader.isna().all(axis=1).sum() == 1
    expected = jsonable(
        {
            "method": "pearson",
            "per_system": comparison.per_system.reset_index(names="system").to_dict("records"),
            "tests": comparison.tests.to_dict("records"),
        }
    )
    units = agreement_report(frame, value_spec(campaign), n_boot=20, confidence=0.9, seed=1)[1]
    assert _systems(campaign, _stored(campaign), units)["uploaded"]["graders"] == expected


def test_resolution_reads_only_the_paired_candidates_yet_equals_it_from_every_rating(campaign, small_slices):
    if campaign.scheme != Scheme.BROAD_FINE:
        pytest.skip("a pairwise campaign is linked to the BROAD/FINE campaign only")
    pairwise_id = selectors.campaign_links(campaign_id=campaign.pk)[1]
    keys = selectors.unit_keys_frame(campaign_id=campaign.pk)
    single = keys[~keys["candidate"].duplicated(keep=False)]
    frame = _frame(campaign)
    every = instrument._ratings(FrameJudgments(frame, value_spec(campaign)), campaign.scheme, single, by="candidate")
    assert every["unit"].str.startswith("c3-").any()  # ratings of candidates no pair holds
    expected = m.resolution(every, instrument._pairs(pairwise_id).dropna())
    got = _instrument(campaign, _stored(campaign))["resolution"]
    assert got["n_pairs"] == expected["n_pairs"]
    assert got["curve"] == jsonable(expected["curve"].to_dict("records"))
    assert got["resolution"] == jsonable(expected["resolution"])


def test_campaigns_without_a_number_or_without_judgments(organizer, small_slices):
    pairwise = _pairwise(organizer)
    frame = _frame(pairwise)
    stored = _stored(pairwise)
    units = pd.DataFrame({"unit": [], "n": []})
    assert _systems(pairwise, stored, units) == _systems(pairwise, frame, units)
    assert not _systems(pairwise, stored, units)["available"]
    assert _instrument(pairwise, stored) is None
    empty = make_campaign(n_queries=2, n_candidates=3, graders=2, organizer=organizer)
    sibling = make_campaign(n_queries=2, n_candidates=3, graders=2, organizer=organizer)
    _judge(sibling, seed=1)
    campaign_set_instrument_links(campaign=empty, sibling=sibling, pairwise=None, actor=None)
    card = _instrument(empty, _frame(empty))
    assert card["reproducibility"]["reason"] == "one of the two campaigns has no judgments yet"
    assert _instrument(empty, _stored(empty)) == card


def test_the_card_of_campaigns_without_queries(organizer, small_slices):
    """Units without a query (NULL in the parts, read back as floats)."""
    ratings = make_campaign(n_queries=0, n_candidates=12, graders=4, overlap=3, organizer=organizer)
    _judge(ratings, seed=4)
    sibling = make_campaign(n_queries=0, n_candidates=12, graders=3, organizer=organizer)
    _judge(sibling, seed=5)
    campaign_set_instrument_links(campaign=ratings, sibling=sibling, pairwise=_pairwise(organizer), actor=None)
    stored = _stored(ratings)
    assert len(stored.parts) > 2
    card = _instrument(ratings, _stored(ratings))
    assert card["reproducibility"]["n_units"] == 12 and card["resolution"]["n_pairs"] > 0
    assert card == _instrument(ratings, _frame(ratings))


def test_rows_among_keeps_the_units_rows_in_order_and_each_other_graders_first_row():
    pieces = [
        pd.DataFrame({"unit": [1, 1, 2], "grader": [7, 8, 7], "value": [1.0, 2.0, 3.0]}, index=[0, 1, 2]),
        pd.DataFrame(
            {"unit": [3, 3, 4, 4], "grader": [8, 9, 9, 10], "value": [4.0, 5.0, 6.0, 7.0]}, index=[3, 4, 5, 6]
        ),
    ]
    kept = pd.concat(list(instrument.rows_among(iter(pieces), [2, 3])))
    assert kept.index.tolist() == [2, 3, 4, 6]  # units 2 and 3; graders 7 to 9 have a row there, 10 not
    assert list(instrument.rows_among(iter(pieces), None)) == pieces
    assert pd.concat(list(instrument.rows_among(iter(pieces), []))).index.tolist() == [0, 1, 4, 6]
