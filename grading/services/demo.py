"""The demo: three campaigns, demo users, synthesised audio and simulated graders of varying reliability.

Everything is generated locally and deterministically (seeded); judgments go through the same
event service as a real grader's, so reports have a full event log to analyse.
"""

from __future__ import annotations

import random
import tempfile
import wave
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction

from grading.models import Assignment, Campaign
from grading.services.campaign_io import campaign_import
from grading.services.events import EventInput, event_record
from grading.services.organizers import create_permission
from grading.services.system_scores import system_scores_import

PASSWORD = {"admin": "evalutron-admin", "organizer": "evalutron-organizer", "grader": "evalutron-grader"}
GRADERS = [f"grader{i}" for i in range(1, 7)]
# A grader's reliability: the spread of their noise on the 0–10 scale.
NOISE = {"grader1": 0.6, "grader2": 0.9, "grader3": 1.2, "grader4": 1.6, "grader5": 2.2, "grader6": 3.2}
WORD_PAIRS = [
    ("car", "automobile", 9.4),
    ("coast", "shore", 9.0),
    ("cup", "mug", 8.3),
    ("money", "cash", 9.1),
    ("tiger", "cat", 7.4),
    ("book", "paper", 6.2),
    ("computer", "keyboard", 6.8),
    ("doctor", "nurse", 7.0),
    ("river", "water", 7.3),
    ("king", "queen", 8.1),
    ("bread", "butter", 6.4),
    ("music", "piano", 6.9),
    ("train", "car", 5.6),
    ("street", "avenue", 8.4),
    ("journey", "voyage", 8.7),
    ("planet", "moon", 6.5),
    ("drink", "eat", 5.9),
    ("stock", "market", 7.1),
    ("forest", "graveyard", 1.9),
    ("noon", "string", 0.6),
    ("rooster", "voyage", 0.4),
    ("chord", "smile", 0.8),
    ("professor", "cucumber", 0.3),
    ("king", "cabbage", 0.2),
    ("glass", "magician", 2.1),
    ("monk", "slave", 2.9),
    ("lad", "wizard", 3.0),
    ("sugar", "approach", 0.9),
    ("cemetery", "woodland", 2.5),
    ("shore", "woodland", 3.1),
    ("bird", "crane", 7.4),
    ("asylum", "madhouse", 8.9),
]
ORDERING_TOPICS = {
    "Calm evening playlist": ["Nocturne", "Ambient drift", "Soft rain", "Lo-fi beat", "Jazz ballad", "Drum solo"],
    "Workout playlist": ["Power anthem", "Fast techno", "Rock riff", "Hip-hop beat", "Acoustic folk", "Lullaby"],
    "Dinner party playlist": ["Bossa nova", "Cool jazz", "Soul classic", "Indie pop", "Heavy metal", "Noise"],
    "Focus playlist": ["Minimal piano", "Ambient pad", "Baroque strings", "Post-rock", "Pop hit", "Talk radio"],
}


@dataclass(frozen=True)
class DemoLogin:
    username: str
    password: str
    role: str


def demo_logins() -> list[DemoLogin]:
    return [
        DemoLogin("admin", PASSWORD["admin"], "admin (staff)"),
        DemoLogin("organizer", PASSWORD["organizer"], "organizer"),
    ] + [DemoLogin(g, PASSWORD["grader"], f"grader (noise σ={NOISE[g]})") for g in GRADERS]


def seed_demo(*, seed: int = 2006, simulate: bool = True, n_queries: int = 4, n_candidates: int = 12) -> list[Campaign]:
    """Create the demo users and campaigns. Idempotent: an existing demo campaign is left as it is."""
    _users()
    rng = np.random.default_rng(seed)
    made = []
    for slug, build in (
        ("demo-audio-similarity", _audio),
        ("demo-word-pairs", _word_pairs),
        ("demo-playlist-orderings", _orderings),
    ):
        if Campaign.objects.filter(slug=slug).exists():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            definition, truth = build(rng, Path(tmp), n_queries=n_queries, n_candidates=n_candidates)
            campaign = campaign_import(definition=definition, media_dir=Path(tmp))
        if simulate:
            _simulate(campaign, truth, random.Random(f"{seed}-{slug}"))
        if slug == "demo-audio-similarity":
            _system_scores(campaign, truth, np.random.default_rng([seed, 7]))
        made.append(campaign)
    return made


def _users() -> None:
    users = get_user_model().objects
    if not users.filter(username="admin").exists():
        users.create_superuser("admin", "admin@example.org", PASSWORD["admin"])
    for name, password in [("organizer", PASSWORD["organizer"])] + [(g, PASSWORD["grader"]) for g in GRADERS]:
        user, created = users.get_or_create(username=name)
        if created or not user.has_usable_password():
            user.set_password(password)
            user.save(update_fields=["password"])
        if name == "organizer":  # the demo's organizer can create campaigns (docs/design.md §1)
            user.user_permissions.add(create_permission())


def _write_wav(path: Path, signal: np.ndarray, rate: int = 16000) -> None:
    pcm = (np.clip(signal, -1, 1) * 32767 * 0.5).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def _clip(freqs: np.ndarray, tempo: float, brightness: float, rate: int = 16000, seconds: float = 2.5) -> np.ndarray:
    """A short synthetic phrase: a chord with a pulse, its timbre set by `brightness`."""
    t = np.arange(int(rate * seconds)) / rate
    harmonics = np.arange(1, 6)[:, None, None]
    tone = (np.sin(2 * np.pi * harmonics * freqs[None, :, None] * t) * brightness ** (harmonics - 1)).sum(axis=(0, 1))
    pulse = 0.55 + 0.45 * np.cos(2 * np.pi * tempo / 60 * t) ** 2
    fade = np.minimum(1, np.minimum(t / 0.05, (seconds - t) / 0.3))
    return tone / np.abs(tone).max() * pulse * fade


# How well each simulated system judges similarity: the noise on its view of it (0–1 scale), for
# choosing the candidates it returns (provenance) and for its per-unit scores (0–10 scale). A and B
# are close, C much worse: the report shows a pair that can be told apart and one that cannot.
SYSTEM_NOISE = {"system-a": 0.05, "system-b": 0.2, "system-c": 0.8}
SCORE_NOISE = {"system-a": 1.2, "system-b": 1.2, "system-c": 3.5}
RETURNED = 5  # candidates each system returns per query


def _returned_by(rng: np.random.Generator, similarities: np.ndarray) -> list[list[tuple[str, int]]]:
    """Per candidate, the (system, rank) pairs of the systems that returned it: each system returns
    its top RETURNED by its noisy view of similarity; a candidate no system chose is system-c's too
    (ranked after its own picks), so every candidate has a provenance."""
    returned: list[list[tuple[str, int]]] = [[] for _ in similarities]
    for system, noise in SYSTEM_NOISE.items():
        view = similarities + rng.normal(0, noise, similarities.size)
        for rank, c in enumerate(np.argsort(-view, kind="stable")[:RETURNED], start=1):
            returned[c].append((system, rank))
    extra = RETURNED
    for c in range(similarities.size):
        if not returned[c]:
            extra += 1
            returned[c].append(("system-c", extra))
    return returned


def _audio(rng: np.random.Generator, folder: Path, *, n_queries: int, n_candidates: int) -> tuple[dict, dict]:
    systems = list(SYSTEM_NOISE)
    queries, candidates, truth = [], [], {}
    for q in range(n_queries):
        base = 196 * 2 ** (rng.integers(0, 12) / 12) * np.array([1, 1.26, 1.5])
        tempo, bright = rng.uniform(70, 140), rng.uniform(0.2, 0.7)
        _write_wav(folder / f"q{q + 1}.wav", _clip(base, tempo, bright))
        queries.append({"id": f"q{q + 1}", "title": f"Query clip {q + 1}", "kind": "audio", "media": f"q{q + 1}.wav"})
        similarities = rng.beta(1.3, 1.3, size=n_candidates)  # 1 = same piece, 0 = unrelated
        returned = _returned_by(rng, similarities)
        for c, similarity in enumerate(similarities.tolist()):
            shift = (1 - similarity) * rng.uniform(-7, 7)
            freqs = base * 2 ** (shift / 12)
            name = f"q{q + 1}-c{c + 1:02d}"
            _write_wav(
                folder / f"{name}.wav",
                _clip(
                    freqs,
                    tempo + (1 - similarity) * rng.uniform(-50, 50),
                    np.clip(bright + (1 - similarity) * rng.uniform(-0.3, 0.3), 0.05, 0.9),
                ),
            )
            candidates.append(
                {
                    "id": name,
                    "kind": "audio",
                    "media": f"{name}.wav",
                    "provenance": [{"system": s, "query": f"q{q + 1}", "rank": rank} for s, rank in returned[c]],
                }
            )
            truth[f"q{q + 1}/{name}"] = 10 * similarity
    guidelines = (
        "Listen to the query clip, then to each candidate. Ask yourself: would a listener who likes the query "
        "enjoy this candidate for the same reasons?\n\nBROAD: Not Similar, Somewhat Similar, or Very Similar.\n"
        "FINE: a score from 0.0 to 10.0 that agrees with your BROAD choice (Very Similar is usually above 6)."
    )
    return {
        "campaign": {
            "name": "Audio music similarity (demo)",
            "slug": "demo-audio-similarity",
            "scheme": "broad_fine",
            "description": "Synthesised clips in the style of the MIREX audio music similarity task.",
            "guidelines": guidelines,
            "status": "open",
            "initial_overlap": 3,
            "max_overlap": 5,
            "policy": "consensus",
        },
        "systems": [{"name": s} for s in systems],
        "queries": queries,
        "candidates": candidates,
        "graders": GRADERS,
        "organizers": ["organizer"],
    }, truth


def _system_scores(campaign: Campaign, truth: dict[str, float], rng: np.random.Generator) -> None:
    """Each simulated system's score for every unit: the true similarity seen through its noise."""
    units = sorted(truth)
    rows = [
        {"unit": unit, "system": system, "score": round(float(np.clip(truth[unit] + noise, 0, 10)), 2)}
        for system, spread in SCORE_NOISE.items()
        for unit, noise in zip(units, rng.normal(0, spread, len(units)), strict=True)
    ]
    system_scores_import(campaign=campaign, rows=rows)


def _word_pairs(rng: np.random.Generator, folder: Path, **_: int) -> tuple[dict, dict]:
    candidates = [{"id": f"{a}-{b}", "kind": "text", "text": f"{a} — {b}"} for a, b, _s in WORD_PAIRS]
    truth = {f"{a}-{b}": s for a, b, s in WORD_PAIRS}
    return {
        "campaign": {
            "name": "Word-pair similarity 0–10 (demo)",
            "slug": "demo-word-pairs",
            "scheme": "numeric",
            "scheme_params": {"min": 0, "max": 10, "step": 1},
            "status": "open",
            "initial_overlap": 5,
            "max_overlap": 6,
            "guidelines": "How similar in meaning are the two words? 0 = unrelated, 10 = the same meaning.",
        },
        "candidates": candidates,
        "graders": GRADERS,
        "organizers": ["organizer"],
    }, truth


def _orderings(rng: np.random.Generator, folder: Path, **_: int) -> tuple[dict, dict]:
    queries, candidates, truth = [], [], {}
    for q, (topic, items) in enumerate(ORDERING_TOPICS.items(), start=1):
        queries.append({"id": f"t{q}", "title": topic, "kind": "text", "text": topic})
        for rank, item in enumerate(items):
            cid = f"t{q}-{item.lower().replace(' ', '-')}"
            candidates.append({"id": cid, "kind": "text", "text": item, "queries": [f"t{q}"]})
            truth[cid] = len(items) - rank
    return {
        "campaign": {
            "name": "Playlist orderings (demo)",
            "slug": "demo-playlist-orderings",
            "scheme": "ordering",
            "status": "open",
            "initial_overlap": 5,
            "max_overlap": 6,
            "guidelines": "Order the tracks from the best fit for the playlist to the worst.",
        },
        "queries": queries,
        "candidates": candidates,
        "graders": GRADERS,
        "organizers": ["organizer"],
    }, truth


class _Session:
    """One simulated grader's sitting: sequence numbers and a clock that moves like a person's."""

    def __init__(self, grader, campaign: Campaign, rnd: random.Random, start: datetime) -> None:
        self.grader, self.campaign, self.rnd, self.clock, self.seq = grader, campaign, rnd, start, 0
        self.session_id = f"demo-{grader.username}-{rnd.getrandbits(32):08x}"

    def send(self, kind: str, payload: dict | None = None, *, unit=None, query=None, wait: float = 3.0) -> None:
        self.seq += 1
        self.clock += timedelta(seconds=self.rnd.expovariate(1 / wait))
        event_record(
            grader=self.grader,
            data=EventInput(
                id=UUID(int=self.rnd.getrandbits(128), version=4),
                campaign_id=self.campaign.pk,
                type=kind,
                payload=payload or {},
                unit_id=getattr(unit, "pk", None),
                query_id=getattr(query, "pk", None),
                client_ts=self.clock,
                seq=self.seq,
                session_id=self.session_id,
            ),
        )


def _broad_of(score: float, rnd: random.Random) -> str:
    cut_low, cut_high = 3.5 + rnd.gauss(0, 0.4), 7.0 + rnd.gauss(0, 0.4)
    return "NS" if score < cut_low else "SS" if score < cut_high else "VS"


@transaction.atomic
def _simulate(campaign: Campaign, truth: dict[str, float], rnd: random.Random) -> None:
    start = datetime.now(UTC) - timedelta(days=6)
    assignments = (
        Assignment.objects.filter(campaign=campaign)
        .select_related("grader", "unit", "query", "unit__candidate")
        .order_by("grader_id", "position")
    )
    by_grader: dict[int, list[Assignment]] = {}
    for a in assignments:
        by_grader.setdefault(a.grader_id, []).append(a)
    for items in by_grader.values():
        grader = items[0].grader
        session = _Session(grader, campaign, rnd, start + timedelta(hours=rnd.uniform(0, 96)))
        session.send("guidelines_viewed", {"version": campaign.guidelines_version}, wait=5)
        done = items[: int(len(items) * rnd.uniform(0.8, 1.0))]  # not everyone finishes
        for assignment in done:
            noise = NOISE.get(grader.username, 1.5)
            if campaign.scheme == "ordering":
                _simulate_ordering(session, assignment, truth, noise)
            else:
                _simulate_unit(session, assignment, truth[assignment.unit.external_id], noise)


def _simulate_unit(session: _Session, assignment: Assignment, true_score: float, noise: float) -> None:
    rnd, unit = session.rnd, assignment.unit
    perceived = min(10.0, max(0.0, rnd.gauss(true_score, noise)))
    session.send("unit_viewed", unit=unit, wait=2)
    if session.campaign.scheme == "numeric":
        session.send("score_set", {"value": int(round(perceived))}, unit=unit, wait=6)
        if rnd.random() < 0.1:
            session.send(
                "score_set", {"value": int(round(min(10, max(0, perceived + rnd.choice([-1, 1])))))}, unit=unit
            )
        return
    session.send("audition", {"action": "play", "position": 0, "target": "candidate"}, unit=unit, wait=1)
    if rnd.random() < 0.3:
        session.send(
            "audition", {"action": "seek", "position": round(rnd.uniform(0.5, 2), 2), "target": "candidate"}, unit=unit
        )
    session.send("audition", {"action": "ended", "position": 2.5, "target": "candidate"}, unit=unit, wait=2.5)
    broad = _broad_of(perceived, rnd)
    session.send("broad_set", {"value": broad}, unit=unit, wait=3)
    session.send("fine_set", {"value": round(perceived, 1)}, unit=unit, wait=4)
    if rnd.random() < 0.15:  # second thoughts: a change, sometimes taken back
        other = rnd.choice([b for b in ("NS", "SS", "VS") if b != broad])
        session.send("broad_set", {"value": other}, unit=unit, wait=5)
        if rnd.random() < 0.4:
            session.send("broad_set", {"value": broad}, unit=unit, wait=3)
    if rnd.random() < 0.1:
        session.send(
            "fine_set", {"value": round(min(10, max(0, perceived + rnd.uniform(-1, 1))), 1)}, unit=unit, wait=4
        )


def _simulate_ordering(session: _Session, assignment: Assignment, truth: dict[str, float], noise: float) -> None:
    rnd, query = session.rnd, assignment.query
    cands = list(query.units.select_related("candidate").values_list("candidate__external_id", "candidate__public_id"))
    perceived = sorted(cands, key=lambda c: -(truth[c[0]] + rnd.gauss(0, noise * 0.6)))
    shuffled = [c[1] for c in cands]
    rnd.shuffle(shuffled)
    session.send("ordering_changed", {"items": shuffled}, query=query, wait=4)
    session.send("ordering_submitted", {"items": [c[1] for c in perceived]}, query=query, wait=20)
