"""Importing and exporting whole campaigns. Import is all or nothing; export → import round-trips."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction

from grading.models import Campaign, Candidate, CandidateProvenance, Query, System, Unit
from grading.models.choices import Role
from grading.models.items import media_suffix, new_public_id
from grading.services.campaign_files import FORMAT, CampaignFileError, definition_check
from grading.services.campaigns import (
    assignments_create_initial,
    campaign_create,
    campaign_set_guidelines,
    graders_of,
    role_grant,
)
from grading.services.system_scores import system_scores_import
from grading.services.trec_runs import SYSTEM_SCORES


def campaign_import(
    *, definition: dict[str, Any], media_dir: Path | None, created_by: AbstractBaseUser | None = None
) -> Campaign:
    """Create a campaign from a definition. A malformed definition raises CampaignFileError and stores nothing."""
    plan = definition_check(definition, media_dir)
    camp = plan["campaign"]
    if Campaign.objects.filter(slug=camp["slug"]).exists():
        raise CampaignFileError("campaign", "slug", camp["slug"], "a campaign with this slug already exists")
    saved: list[str] = []
    try:
        with transaction.atomic():
            campaign = _write(plan, created_by, saved)
            if definition.get(SYSTEM_SCORES):  # a pool of TREC runs: the runs' scores of its pairs
                system_scores_import(campaign=campaign, rows=definition[SYSTEM_SCORES], actor=created_by)
    except BaseException:
        for name in saved:  # files are not transactional: remove what this import stored
            default_storage.delete(name)
        raise
    return campaign


def _write(plan: dict[str, Any], created_by: AbstractBaseUser | None, saved: list[str]) -> Campaign:
    camp = plan["campaign"]
    versions = camp.pop("guidelines")
    campaign = campaign_create(**camp, created_by=created_by)
    for text in versions:
        campaign_set_guidelines(campaign=campaign, text=text)
    systems = {s["name"]: System.objects.create(campaign=campaign, **s) for s in plan["systems"]}
    queries = {}
    for pos, q in enumerate(plan["queries"]):
        public_id = new_public_id()
        queries[q["id"]] = Query.objects.create(
            campaign=campaign,
            external_id=q["id"],
            title=q["title"],
            kind=q["kind"],
            text=q["text"],
            public_id=public_id,
            media_url=q["media_url"],
            media_file=_store(campaign, q["media"], public_id, saved),
            position=pos,
        )
    candidates = {}
    for c in plan["candidates"]:
        public_id = new_public_id()
        cand = Candidate.objects.create(
            campaign=campaign,
            external_id=c["id"],
            kind=c["kind"],
            text=c["text"],
            media_url=c["media_url"],
            public_id=public_id,
            media_file=_store(campaign, c["media"], public_id, saved),
        )
        candidates[c["id"]] = cand
        CandidateProvenance.objects.bulk_create(
            [
                CandidateProvenance(
                    candidate=cand, system=systems[p["system"]], query=queries.get(p["query"]), rank=p["rank"]
                )
                for p in c["provenance"]
            ]
        )
    Unit.objects.bulk_create(
        [
            Unit(
                campaign=campaign,
                external_id=u["id"],
                query=queries.get(u["query"]),
                candidate=candidates[u["candidate"]],
                candidate_b=candidates.get(u["candidate_b"]),
                position=pos,
            )
            for pos, u in enumerate(plan["units"])
        ]
    )
    users = get_user_model().objects
    for role_list, role in (("graders", Role.GRADER), ("organizers", Role.ORGANIZER)):
        for name in plan[role_list]:
            user, created = users.get_or_create(username=name)
            if created:
                user.set_unusable_password()  # an admin sets a password or the user resets it
                user.save(update_fields=["password"])
            role_grant(campaign=campaign, user=user, role=role)
    if plan["assign"] and len(plan["graders"]) >= campaign.initial_overlap:
        assignments_create_initial(campaign=campaign, seed=0)
    return campaign


def _store(campaign: Campaign, path: Path | None, public_id: str, saved: list[str]) -> str:
    """Store a media file under the item's public id: the file's own name may carry external ids
    (blinding), and a short name always fits the column."""
    if path is None:
        return ""
    with open(path, "rb") as fh:
        name = default_storage.save(f"campaigns/{campaign.pk}/{public_id}{media_suffix(path.name)}", File(fh))
    saved.append(name)
    return name


def campaign_export(*, campaign: Campaign, directory: Path) -> Path:
    """Write `campaign.json` and a `media/` folder into directory; import_campaign reads them back."""
    directory = Path(directory)
    media = directory / "media"
    media.mkdir(parents=True, exist_ok=True)
    definition = campaign_definition(campaign, media_out=media)
    target = directory / "campaign.json"
    target.write_text(json.dumps(definition, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


def campaign_definition(campaign: Campaign, *, media_out: Path | None = None) -> dict[str, Any]:
    used: set[str] = set()

    def media(obj: Query | Candidate) -> str:
        if not obj.media_file or media_out is None:
            return ""
        name = Path(obj.media_file.name).name
        while name in used:
            name = f"{obj.external_id}-{name}"
        used.add(name)
        with obj.media_file.open("rb") as src, open(media_out / name, "wb") as dst:
            shutil.copyfileobj(src, dst)
        return f"media/{name}"

    def item(obj: Query | Candidate) -> dict[str, Any]:
        return {
            "id": obj.external_id,
            "kind": obj.kind,
            "text": obj.text,
            "media": media(obj),
            "media_url": obj.media_url,
        }

    roles = campaign.roles.select_related("user").order_by("id")
    return {
        "format": FORMAT,
        "campaign": {
            "name": campaign.name,
            "slug": campaign.slug,
            "scheme": campaign.scheme,
            "scheme_params": campaign.scheme_params,
            "description": campaign.description,
            "status": campaign.status,
            "initial_overlap": campaign.initial_overlap,
            "max_overlap": campaign.max_overlap,
            "budget": campaign.budget,
            "policy": campaign.policy,
            "policy_params": campaign.policy_params,
            "guidelines": list(campaign.guidelines.order_by("version").values_list("text", flat=True)),
        },
        "systems": [{"name": s.name, "description": s.description} for s in campaign.systems.order_by("name")],
        "queries": [{**item(q), "title": q.title} for q in campaign.queries.order_by("position", "id")],
        "candidates": [
            {
                **item(c),
                "provenance": [
                    {"system": p.system.name, "query": p.query.external_id if p.query else None, "rank": p.rank}
                    for p in c.provenance.select_related("system", "query").order_by(
                        "system__name", "query__external_id", "rank"
                    )
                ],
            }
            for c in campaign.candidates.order_by("id")
        ],
        "units": [
            {
                "id": u.external_id,
                "query": u.query.external_id if u.query else None,
                "candidate": u.candidate.external_id,
                "candidate_b": u.candidate_b.external_id if u.candidate_b else None,
            }
            for u in campaign.units.select_related("query", "candidate", "candidate_b").order_by("position", "id")
        ],
        "graders": [r.user.username for r in roles if r.role == Role.GRADER],
        "organizers": [r.user.username for r in roles if r.role == Role.ORGANIZER],
        "assign": bool(graders_of(campaign)) and campaign.assignments.exists(),
    }
