"""Crowd studies: join links and the participants who come through them (docs/design.md §2,
"Join links").

An organizer makes a link per recruitment (`join_link_create`) and pastes its address into the
platform, which appends the participant's id: `PROLIFIC_PID`, `STUDY_ID`, `SESSION_ID` (Prolific),
`workerId`, `assignmentId`, `hitId` (Mechanical Turk) or a generic `pid`. `participant_join` makes
the participant a pseudonymous grader (an account without a usable password, added to the campaign
as members are) with their share of the work; the same platform id, from any browser, comes back to
the same grader. The platform id is hostile input: bounded in length and characters, never shown to
graders, and only used to find the participant again.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import uuid4

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from grading.errors import InvalidValue, NotAllowed
from grading.models import Campaign, GradingEvent, JoinLink, Participant, Platform
from grading.models.choices import EventType, Role
from grading.selectors_organizer import participant_find
from grading.services.audit import audit_record
from grading.services.campaigns import assignments_create_for_grader
from grading.services.members import member_grant
from grading.services.qualification import qualification_checked, qualification_give

MAX_ID = 64
PLATFORM_ID = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}$")
CODE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_CONSENT = 20000
MAX_PARTICIPANTS = 100_000
MAX_LABEL = 100
MAX_RATE = Decimal("100000")
# Query parameters per platform: (participant id, study id, session id).
PARAMETERS = {
    Platform.PROLIFIC: ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    Platform.MTURK: ("workerId", "hitId", "assignmentId"),
    Platform.GENERIC: ("pid", "", ""),
}
# Why a link takes nobody new (a key of CLOSED_WORDS), in the participant's words.
PAUSED, EXPIRED, FULL, NOT_OPEN, NO_WORK = "paused", "expired", "full", "not_open", "no_work"
NO_QUALIFICATION = "no_qualification"
CLOSED_WORDS = {
    PAUSED: "This study link is paused: it takes no new participants at the moment. Please try again later, "
    "or return the study on your platform.",
    EXPIRED: "This study link has expired: it takes no new participants.",
    FULL: "This study is full: every place has been taken. Please return the study on your platform.",
    NOT_OPEN: "This study is not open for grading at the moment.",
    NO_WORK: "This study has no work left to give: every unit already has enough judgments.",
    NO_QUALIFICATION: "This study cannot take participants at the moment. Please return the study on your platform.",
}


# The same, in the organizer's words (the campaign page).
ORGANIZER_WORDS = {
    PAUSED: "Paused: nobody new can join; participants already in keep working.",
    EXPIRED: "Expired: nobody new can join; participants already in keep working.",
    FULL: "Full: every place is taken. Make another link for more participants.",
    NOT_OPEN: "Nobody can join while the campaign is not open.",
}


class LinkClosed(NotAllowed):
    code = "link_closed"

    def __init__(self, reason: str) -> None:
        super().__init__(CLOSED_WORDS[reason], field="link", value=reason)
        self.reason = reason


@dataclass(frozen=True)
class Identity:
    """Who the platform says the participant is."""

    platform: str
    external_id: str
    study_id: str = ""
    session_id: str = ""


@dataclass(frozen=True)
class Joined:
    participant: Participant
    created: bool  # a new grader (False: the same platform id came back)


def identity_from(params: Any) -> Identity | None:
    """The platform identity in a request's parameters (a QueryDict or a dict), or None when there
    is no id. Raises InvalidValue naming the parameter when an id is too long or has characters no
    platform uses (letters, digits and _ . : @ - only)."""
    for platform, names in PARAMETERS.items():
        pid_name = names[0]
        raw = params.get(pid_name)
        if raw is None or not str(raw).strip():
            continue
        values = [_checked(params, name, required=(name == pid_name)) for name in names]
        if platform == Platform.GENERIC:  # typed into the page's form, which asks where they came from
            chosen = str(params.get("platform") or "")
            platform = chosen if chosen in Platform.values else Platform.GENERIC
        return Identity(platform=platform, external_id=values[0], study_id=values[1], session_id=values[2])
    return None


def _checked(params: Any, name: str, *, required: bool) -> str:
    if not name:
        return ""
    value = str(params.get(name) or "").strip()
    if not value and not required:
        return ""
    if len(value) > MAX_ID:
        raise InvalidValue(
            f"{name} is {len(value)} characters long; an id has at most {MAX_ID}.", field=name, value=value[:20] + "…"
        )
    if not PLATFORM_ID.match(value):
        raise InvalidValue(
            f"{name} may hold only letters, digits and _ . : @ - (got {value[:40]!r}).", field=name, value=value[:40]
        )
    return value


def link_url_path(link: JoinLink) -> str:
    """The link's path; the platform appends its parameters."""
    return reverse("grading:join", args=[link.key])


def closed_reason(link: JoinLink, *, now: datetime | None = None) -> str | None:
    """Why the link takes nobody new right now (a key of CLOSED_WORDS), or None when it does."""
    n = Participant.objects.filter(link=link).count()
    return link.closed_reason(n_participants=n, now=now or timezone.now())


@transaction.atomic
def join_link_create(
    *,
    campaign: Campaign,
    actor: AbstractBaseUser | None,
    completion_code: str,
    max_participants: int,
    expires_at: datetime | None = None,
    consent_text: str = "",
    qualification: dict[str, Any] | None = None,
    label: str = "",
    return_url: str = "",
    units_per_participant: int | None = None,
    pay_per_unit: Decimal | None = None,
    pay_per_hour: Decimal | None = None,
    currency: str = "",
) -> JoinLink:
    """A new join link for the campaign (recorded in the audit trail as `actor`'s)."""
    completion_code = (completion_code or "").strip()
    if not CODE.match(completion_code):
        raise InvalidValue(
            "completion_code must be 1 to 64 letters, digits, _ or -.", field="completion_code", value=completion_code
        )
    if (
        isinstance(max_participants, bool)
        or not isinstance(max_participants, int)
        or not (1 <= max_participants <= MAX_PARTICIPANTS)
    ):
        raise InvalidValue(
            f"max_participants must be a whole number from 1 to {MAX_PARTICIPANTS}.",
            field="max_participants",
            value=max_participants,
        )
    if units_per_participant is not None and (
        isinstance(units_per_participant, bool)
        or not isinstance(units_per_participant, int)
        or units_per_participant < 1
    ):
        raise InvalidValue(
            "units_per_participant must be a whole number of at least 1 (empty: every unit).",
            field="units_per_participant",
            value=units_per_participant,
        )
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidValue("expires_at must be in the future.", field="expires_at", value=expires_at.isoformat())
    consent_text = (consent_text or "").strip()
    if len(consent_text) > MAX_CONSENT:
        raise InvalidValue(
            f"consent_text is longer than {MAX_CONSENT} characters.", field="consent_text", value=len(consent_text)
        )
    qualification = qualification_checked(campaign=campaign, rule=qualification, code_pattern=CODE)
    label = (label or "").strip()
    if len(label) > MAX_LABEL:
        raise InvalidValue(f"label is longer than {MAX_LABEL} characters.", field="label", value=label[:40] + "…")
    return_url = (return_url or "").strip()
    if return_url:
        try:
            URLValidator(schemes=["http", "https"])(return_url.replace("{code}", "CODE"))
        except ValidationError:
            raise InvalidValue(
                "return_url must be an http(s) address, e.g. https://app.prolific.com/submissions/complete?cc={code}.",
                field="return_url",
                value=return_url[:80],
            ) from None
        if len(return_url) > 500:
            raise InvalidValue("return_url is longer than 500 characters.", field="return_url", value=return_url[:80])
    rates = {"pay_per_unit": pay_per_unit, "pay_per_hour": pay_per_hour}
    for name, rate in rates.items():
        if rate is not None and not (0 <= rate <= MAX_RATE):
            raise InvalidValue(f"{name} must be from 0 to {MAX_RATE}.", field=name, value=str(rate))
    currency = (currency or "").strip().upper()
    if currency and not re.fullmatch(r"[A-Z]{3}", currency):
        raise InvalidValue("currency must be a three-letter code such as GBP or USD.", field="currency", value=currency)
    link = JoinLink.objects.create(
        campaign=campaign,
        key=secrets.token_urlsafe(16),
        label=label,
        completion_code=completion_code,
        return_url=return_url,
        max_participants=max_participants,
        units_per_participant=units_per_participant,
        expires_at=expires_at,
        consent_text=consent_text,
        qualification=qualification,
        pay_per_unit=pay_per_unit,
        pay_per_hour=pay_per_hour,
        currency=currency,
        created_by=actor if actor is not None and actor.is_authenticated else None,
    )
    audit_record(
        actor=actor,
        campaign=campaign,
        action="join_link.created",
        target=f"join link {link.pk}" + (f" ({label})" if label else ""),
        after={
            "max_participants": max_participants,
            "units_per_participant": units_per_participant,
            "expires_at": expires_at,
            "consent": bool(consent_text),
            "return_url": return_url,
            "qualification": qualification,
            "pay_per_unit": pay_per_unit,
            "pay_per_hour": pay_per_hour,
            "currency": currency,
        },
    )
    return link


@transaction.atomic
def join_link_update(
    *, link: JoinLink, actor: AbstractBaseUser | None, paused: bool | None = None, qualification: Any = ...
) -> JoinLink:
    """Change the link's qualification rule (when given) and pause or reopen it (when given), in one
    transaction: a bad rule changes nothing."""
    if qualification is not ...:
        link = join_link_set_qualification(link=link, qualification=qualification, actor=actor)
    if paused is not None:
        link = join_link_pause(link=link, paused=paused, actor=actor)
    return link


@transaction.atomic
def join_link_set_qualification(*, link: JoinLink, qualification: Any, actor: AbstractBaseUser | None) -> JoinLink:
    """Set, change or remove ({}) the link's qualification rule (checked as `join_link_create` checks
    it). Participants who joined already keep the test they were given; newcomers take the new rule."""
    link = JoinLink.objects.select_for_update().select_related("campaign").get(pk=link.pk)
    rule = qualification_checked(campaign=link.campaign, rule=qualification, code_pattern=CODE)
    if rule == link.qualification:
        return link
    before = link.qualification
    link.qualification = rule
    link.save(update_fields=["qualification"])
    audit_record(
        actor=actor,
        campaign=link.campaign,
        action="join_link.qualification",
        target=f"join link {link.pk}" + (f" ({link.label})" if link.label else ""),
        before={"qualification": before},
        after={"qualification": rule},
    )
    return link


@transaction.atomic
def join_link_pause(*, link: JoinLink, paused: bool, actor: AbstractBaseUser | None) -> JoinLink:
    """Pause the link (it takes nobody new; participants already in keep working) or reopen it."""
    link = JoinLink.objects.select_for_update().select_related("campaign").get(pk=link.pk)
    if link.paused == paused:
        return link
    link.paused = paused
    link.save(update_fields=["paused"])
    audit_record(
        actor=actor,
        campaign=link.campaign,
        action="join_link.paused" if paused else "join_link.reopened",
        target=f"join link {link.pk}" + (f" ({link.label})" if link.label else ""),
        before={"paused": not paused},
        after={"paused": paused},
    )
    return link


def participant_join(*, link: JoinLink, identity: Identity, consent: bool = False) -> Joined:
    """The participant with this platform id in the link's campaign: found again (from any browser,
    through any of the campaign's links), or made now: a pseudonymous grader without a usable
    password, a grader of the campaign (as members are added), with their share of the work.
    A paused, expired or full link, a campaign not open, or a campaign with no work left raises
    LinkClosed and stores nothing. A link with consent text takes a new participant only with
    `consent` (they pressed "I agree"): the agreement is a `consent_given` event of the new grader,
    written in the same transaction (InvalidValue without it, nothing stored)."""
    try:
        return _join(link=link, identity=identity, consent=consent)
    except IntegrityError:
        # The same platform id joined at the same moment through another link: that one won.
        found = participant_find(campaign=link.campaign, platform=identity.platform, external_id=identity.external_id)
        if found is None:
            raise
        return Joined(participant=found, created=False)


@transaction.atomic
def _join(*, link: JoinLink, identity: Identity, consent: bool) -> Joined:
    # One join of a link at a time: the count of participants is current under this lock.
    link = JoinLink.objects.select_for_update().select_related("campaign").get(pk=link.pk)
    campaign = link.campaign
    found = participant_find(campaign=campaign, platform=identity.platform, external_id=identity.external_id)
    if found is not None:
        return Joined(participant=found, created=False)
    reason = closed_reason(link)
    if reason is not None:
        raise LinkClosed(reason)
    if link.consent_text and not consent:
        raise InvalidValue("to take part, agree to the consent text (the “I agree” button).", field="consent", value="")
    user = get_user_model().objects.create_user(username=_free_username())
    user.set_unusable_password()
    user.save(update_fields=["password"])
    participant = Participant.objects.create(
        campaign=campaign,
        link=link,
        user=user,
        platform=identity.platform,
        external_id=identity.external_id,
        study_id=identity.study_id,
        session_id=identity.session_id,
    )
    member_grant(campaign=campaign, user=user, role=Role.GRADER, actor=None)
    rule = link.qualification or {}
    if rule and qualification_give(participant=participant, link=link) < rule["units"]:
        raise LinkClosed(NO_QUALIFICATION)  # gold answers were removed since the rule was set: nobody joins
    made = assignments_create_for_grader(
        campaign=campaign, grader=user, limit=link.units_per_participant, seed=participant.pk
    )
    if not made:
        raise LinkClosed(NO_WORK)  # rolls the new account back with everything else
    if link.consent_text:
        consent_record(participant=participant, link=link)
    return Joined(participant=participant, created=True)


def consent_record(*, participant: Participant, link: JoinLink) -> GradingEvent:
    """The participant agreed to the link's consent text: a `consent_given` event of their grader,
    naming the link and the text agreed to (its SHA-256). Runs in the transaction that admits them."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("consent_record must run inside the transaction that admits the participant.")
    return GradingEvent.objects.create(
        id=uuid4(),
        campaign=link.campaign,
        grader=participant.user,
        type=EventType.CONSENT_GIVEN,
        payload={"link": link.pk, "text_sha256": hashlib.sha256(link.consent_text.encode("utf-8")).hexdigest()},
        client_ts=timezone.now(),
        session_id="server",
        guidelines_version=link.campaign.guidelines_version,
    )


def _free_username() -> str:
    users = get_user_model().objects
    while True:
        name = f"p-{secrets.token_hex(5)}"
        if not users.filter(username=name).exists():
            return name
