"""Creating a campaign from the browser: stage the uploaded files, preview, then import.

The page and the CLI share one checker and one importer (``campaign_files.definition_check`` and
``campaign_io.campaign_import``): a file refused by one is refused by the other with the same
row, field and value. Between the preview and the confirmation the upload waits in a staging
folder (the checked definition as JSON, plus the extracted media), so confirming imports exactly
what was previewed, all or nothing.
"""

from __future__ import annotations

import json
import secrets
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from grading.errors import InvalidValue, NotAllowed
from grading.models import Campaign
from grading.models.choices import Role
from grading.services.audit import audit_record, campaign_summary
from grading.services.campaign_files import (
    CampaignFileError,
    definition_check,
    definition_from_csv,
    definition_from_json,
)
from grading.services.campaign_io import campaign_import
from grading.services.members import member_grant
from grading.services.organizers import can_create_campaigns
from grading.services.trec_runs import docs_parse, pool_definition, run_parse, text_read, topics_parse

# The same ceilings whichever way a campaign arrives: a definition file or items CSV at most
# IMPORT_MAX_BYTES, a zip of media at most MEDIA_ZIP_MAX_BYTES as uploaded and
# MEDIA_UNPACKED_MAX_BYTES unpacked, in at most this many files.
MEDIA_ZIP_MAX_FILES = 20_000
PREVIEW_ROWS = 5
# A preview nobody confirmed is forgotten after this long (its staged files are removed).
STAGING_MAX_AGE_SECONDS = 24 * 3600


@dataclass
class RunsUpload:
    """TREC run files to pool (grading/services/trec_runs.py), with the optional texts."""

    runs: list[Any]
    depth: int
    topics: Any | None = None
    docs: Any | None = None


@dataclass
class Preview:
    """What confirming will create; `token` names the staged upload."""

    token: str
    name: str
    slug: str
    scheme: str
    counts: dict[str, int]
    examples: dict[str, list[str]] = field(default_factory=dict)
    media_files: int = 0
    status: str = "draft"  # what the campaign will be once created
    # Assignments confirming makes: every unit (ordering: query) gets `initial_overlap` of the
    # file's graders (0: none is made, the file names too few graders or asks for none).
    assigned_overlap: int = 0


def staging_root() -> Path:
    return Path(settings.DATA_DIR) / "staging"


def _staging_dir(token: str) -> Path:
    if not token or not token.isalnum():
        raise InvalidValue(
            "this preview has expired or was already imported; upload the file again.", field="token", value=token
        )
    return staging_root() / token


def media_zip_extract(*, source: IO[bytes], target: Path) -> int:
    """Unpack a zip of media files into `target`, refusing paths that leave it, links, and archives
    larger than MEDIA_ZIP_MAX_BYTES (or MEDIA_UNPACKED_MAX_BYTES unpacked). The zip is read where it
    lies (an upload streamed to a temporary file), never into memory. Returns the number of files."""
    size = getattr(source, "size", None)
    if size is not None and size > settings.MEDIA_ZIP_MAX_BYTES:
        raise CampaignFileError(
            "media zip",
            "(size)",
            size,
            f"the zip may be at most {_mb(settings.MEDIA_ZIP_MAX_BYTES)}",
        )
    try:
        archive = zipfile.ZipFile(source)
    except zipfile.BadZipFile:
        raise CampaignFileError(
            "media zip", "(zip)", getattr(source, "name", "upload"), "the file is not a zip archive"
        ) from None
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > MEDIA_ZIP_MAX_FILES:
            raise CampaignFileError(
                "media zip", "(files)", len(members), f"at most {MEDIA_ZIP_MAX_FILES} files are accepted"
            )
        total = sum(m.file_size for m in members)
        if total > settings.MEDIA_UNPACKED_MAX_BYTES:
            raise CampaignFileError(
                "media zip",
                "(size)",
                total,
                f"unpacked, the media may take at most {_mb(settings.MEDIA_UNPACKED_MAX_BYTES)}",
            )
        for member in members:
            name = PurePosixPath(member.filename)
            if name.is_absolute() or ".." in name.parts or (member.external_attr >> 16) & 0o170000 == 0o120000:
                raise CampaignFileError(
                    "media zip", "name", member.filename, "paths must stay inside the archive (no links, no '..')"
                )
            path = target.joinpath(*name.parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
    return len(members)


def _mb(limit: int) -> str:
    return f"{limit / 2**20:g} MB"


def _save(upload: Any, path: Path, *, what: str) -> Path:
    if upload.size > settings.IMPORT_MAX_BYTES:
        raise CampaignFileError(
            what, "(size)", upload.size, f"the file may be at most {_mb(settings.IMPORT_MAX_BYTES)} (IMPORT_MAX_BYTES)"
        )
    with open(path, "wb") as dst:
        for chunk in upload.chunks():
            dst.write(chunk)
    return path


def campaign_upload_stage(
    *,
    user: AbstractBaseUser,
    definition_file: Any | None = None,
    items_csv: Any | None = None,
    media_zip: Any | None = None,
    settings_fields: dict[str, Any] | None = None,
    runs: RunsUpload | None = None,
) -> Preview:
    """Check an upload completely and stage it for `campaign_upload_confirm`.

    Either a campaign JSON (`definition_file`), or campaign settings from the form (`settings_fields`)
    with an optional items CSV or TREC runs to pool (`runs`); media come as a zip. Raises
    CampaignFileError (row, field, value) or InvalidValue, and keeps nothing, when anything is wrong.
    """
    if not can_create_campaigns(user):
        raise NotAllowed("you may not create campaigns: an admin makes you an organizer on the Organizers page.")
    staging_sweep()
    token = secrets.token_hex(16)
    folder = staging_root() / token
    media_dir = folder / "media"
    media_dir.mkdir(parents=True)
    try:
        n_media = media_zip_extract(source=media_zip, target=media_dir) if media_zip is not None else 0
        if definition_file is not None:
            definition = definition_from_json(_save(definition_file, folder / "upload.json", what="campaign file"))
        elif settings_fields is not None and runs is not None:
            definition = _definition_from_runs(settings_fields, runs, folder)
        elif settings_fields is not None:
            definition = _definition_from_form(settings_fields, items_csv, folder)
        else:
            raise InvalidValue("choose a campaign file, or fill in the form.", field="file", value=None)
        try:
            preview = campaign_preview(definition=definition, media_dir=media_dir, token=token)
        except CampaignFileError as exc:  # name the zip, not a folder of this server
            exc.reword(lambda text: text.replace(str(media_dir.resolve()), "the media zip"))
            raise
        preview.media_files = n_media
        (folder / "definition.json").write_text(json.dumps(definition), encoding="utf-8")
        (folder / "owner").write_text(str(user.pk), encoding="utf-8")
        return preview
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _definition_from_form(fields: dict[str, Any], items_csv: Any | None, folder: Path) -> dict[str, Any]:
    if items_csv is not None:
        return definition_from_csv(_save(items_csv, folder / "items.csv", what="items CSV"), fields)
    return {"campaign": fields, "systems": [], "queries": [], "candidates": []}


def _definition_from_runs(fields: dict[str, Any], upload: RunsUpload, folder: Path) -> dict[str, Any]:
    """The depth-K pool of the uploaded runs as a definition; errors name each file as it was uploaded."""

    def text(file: Any, stem: str) -> str:
        return text_read(_save(file, folder / stem, what=file.name), name=file.name)

    runs = [run_parse(text(f, f"run-{i}.txt"), name=f.name) for i, f in enumerate(upload.runs)]
    topics = topics_parse(text(upload.topics, "topics.tsv"), name=upload.topics.name) if upload.topics else None
    docs = docs_parse(text(upload.docs, "docs.jsonl"), name=upload.docs.name) if upload.docs else None
    return pool_definition(
        campaign=fields,
        runs=runs,
        depth=upload.depth,
        topics=topics,
        docs=docs,
        topics_name=upload.topics.name if upload.topics else "",
        docs_name=upload.docs.name if upload.docs else "",
    )


def campaign_preview(*, definition: dict[str, Any], media_dir: Path | None, token: str = "") -> Preview:
    """Check a definition as the importer will and say what it would create."""
    plan = definition_check(definition, media_dir)
    camp = plan["campaign"]
    if Campaign.objects.filter(slug=camp["slug"]).exists():
        raise CampaignFileError("campaign", "slug", camp["slug"], "a campaign with this slug already exists")
    counts = {key: len(plan[key]) for key in ("queries", "candidates", "units", "systems", "graders", "organizers")}
    counts["guidelines versions"] = len(camp["guidelines"])
    examples = {
        "queries": [q["title"] or q["id"] for q in plan["queries"][:PREVIEW_ROWS]],
        "candidates": [c["id"] for c in plan["candidates"][:PREVIEW_ROWS]],
        "units": [u["id"] for u in plan["units"][:PREVIEW_ROWS]],
        "systems": [s["name"] for s in plan["systems"][:PREVIEW_ROWS]],
    }
    assigns = plan["assign"] and len(plan["graders"]) >= camp["initial_overlap"] and bool(plan["graders"])
    return Preview(
        token=token,
        name=camp["name"],
        slug=camp["slug"],
        scheme=camp["scheme"],
        counts=counts,
        examples=examples,
        status=camp["status"],
        assigned_overlap=camp["initial_overlap"] if assigns else 0,
    )


def campaign_upload_confirm(*, user: AbstractBaseUser, token: str) -> Campaign:
    """Import a staged upload (all or nothing); the person who uploaded it becomes an organizer."""
    folder = _staging_dir(token)
    owner = folder / "owner"
    if not owner.is_file() or owner.read_text(encoding="utf-8") != str(user.pk):
        raise InvalidValue(
            "this preview has expired or was already imported; upload the file again.", field="token", value=token
        )
    definition = json.loads((folder / "definition.json").read_text(encoding="utf-8"))
    with transaction.atomic():
        campaign = campaign_import(definition=definition, media_dir=folder / "media", created_by=user)
        audit_record(actor=user, campaign=campaign, action="campaign.created", after=campaign_summary(campaign))
        member_grant(campaign=campaign, user=user, role=Role.ORGANIZER, actor=user)
    shutil.rmtree(folder, ignore_errors=True)
    return campaign


def staging_sweep() -> int:
    """Remove staged uploads older than STAGING_MAX_AGE_SECONDS; returns how many."""
    import time

    root = staging_root()
    if not root.is_dir():
        return 0
    old = [p for p in root.iterdir() if p.is_dir() and time.time() - p.stat().st_mtime > STAGING_MAX_AGE_SECONDS]
    for path in old:
        shutil.rmtree(path, ignore_errors=True)
    return len(old)


def campaign_upload_discard(*, token: str) -> None:
    shutil.rmtree(_staging_dir(token), ignore_errors=True)
