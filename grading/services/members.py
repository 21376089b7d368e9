"""Campaign members: add graders and organizers by user name or e-mail (one or many), invite the
ones without an account through a one-time set-password link, remove a grader.

A set-password link is Django's password-reset token: it stops working once the password is set
(the token covers the password hash and the last login) and after PASSWORD_RESET_TIMEOUT.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from grading.errors import InvalidValue, NotFound
from grading.models import Assignment, Campaign, CampaignRole
from grading.models.choices import AssignmentStatus, Role
from grading.services.audit import audit_record
from grading.services.campaigns import role_grant

MAX_ENTRIES = 500
_USERNAME = re.compile(r"^[\w.@+-]{1,150}$")
_SPLIT = re.compile(r"[\s,;]+")


@dataclass
class MemberAdded:
    user: AbstractBaseUser
    entry: str
    created: bool  # the account did not exist
    already: bool  # the user already had this role
    link: str = ""  # a one-time set-password link (accounts without a usable password)
    emailed: bool = False


def entries_parse(text: str) -> list[str]:
    """User names or e-mail addresses separated by new lines, commas, semicolons or spaces."""
    entries = list(dict.fromkeys(e.strip() for e in _SPLIT.split(text or "") if e.strip()))
    if not entries:
        raise InvalidValue("give at least one user name or e-mail address.", field="people", value=text)
    if len(entries) > MAX_ENTRIES:
        raise InvalidValue(f"at most {MAX_ENTRIES} people at once.", field="people", value=len(entries))
    for entry in entries:
        if "@" in entry and not entry.startswith("@"):
            try:
                validate_email(entry)
            except Exception:
                raise InvalidValue(f"{entry!r} is not a valid e-mail address.", field="people", value=entry) from None
        elif not _USERNAME.match(entry):
            raise InvalidValue(
                f"{entry!r} is not a valid user name (letters, digits and @.+-_ only).", field="people", value=entry
            )
    return entries


def set_password_path(user: AbstractBaseUser) -> str:
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("password-set", args=[uid, default_token_generator.make_token(user)])


@transaction.atomic
def member_grant(
    *, campaign: Campaign, user: AbstractBaseUser, role: str, actor: AbstractBaseUser | None
) -> CampaignRole:
    """Give `user` the role (see `role_grant`); a new role is recorded in the audit trail as `actor`'s."""
    already = CampaignRole.objects.filter(campaign=campaign, user=user, role=role).exists()
    granted = role_grant(campaign=campaign, user=user, role=role)
    if not already:
        audit_record(
            actor=actor,
            campaign=campaign,
            action="member.added",
            target=user.get_username(),
            after={"user": user.get_username(), "role": role, "pseudonym": granted.pseudonym},
        )
    return granted


@transaction.atomic
def members_add(
    *,
    campaign: Campaign,
    people: str,
    role: str,
    absolute_url: Callable[[str], str],
    actor: AbstractBaseUser | None,
) -> list[MemberAdded]:
    """Give everyone listed the role in the campaign, creating missing accounts. All or nothing.
    Each new role, and each one-time link made for an account without a password (an invitation),
    is recorded in the audit trail as `actor`'s (the link itself is not: it is a password)."""
    if role not in Role.values:
        raise InvalidValue(f"role {role!r} is not one of {', '.join(Role.values)}.", field="role", value=role)
    users = get_user_model().objects
    added = []
    for entry in entries_parse(people):
        is_email = "@" in entry and not entry.startswith("@")
        found = users.filter(email__iexact=entry) if is_email else users.filter(username=entry)
        user = found.order_by("pk").first()
        created = user is None
        if created:
            user = users.create_user(username=_free_username(entry), email=entry if is_email else "")
            user.set_unusable_password()
            user.save(update_fields=["password"])
        elif not user.is_active:
            raise InvalidValue(f"the account {user.username!r} is deactivated.", field="people", value=entry)
        already = CampaignRole.objects.filter(campaign=campaign, user=user, role=role).exists()
        member_grant(campaign=campaign, user=user, role=role, actor=actor)
        member = MemberAdded(user=user, entry=entry, created=created, already=already)
        if not user.has_usable_password():
            member.link = absolute_url(set_password_path(user))
        added.append(member)
    for member in added:
        if member.link and member.user.email and settings.EMAIL_ENABLED:
            transaction.on_commit(lambda m=member: _send_invitation(campaign, m))
            member.emailed = True
        if member.link:
            audit_record(
                actor=actor,
                campaign=campaign,
                action="invitation.created",
                target=member.user.get_username(),
                after={"account": "new" if member.created else "existing", "emailed": member.emailed},
            )
    return added


def _free_username(entry: str) -> str:
    base = entry.split("@", 1)[0] if "@" in entry and not entry.startswith("@") else entry
    base = re.sub(r"[^\w.+-]", "", base)[:140] or "user"
    users = get_user_model().objects
    name, n = base, 1
    while users.filter(username=name).exists():
        n += 1
        name = f"{base}{n}"
    return name


def _send_invitation(campaign: Campaign, member: MemberAdded) -> None:
    send_mail(
        subject=f"You are invited to {campaign.name} on Evalutron",
        message=(
            f'Hello {member.user.username},\n\nYou have been added to the campaign "{campaign.name}".\n'
            f"Set your password here (the link works once):\n\n{member.link}\n\n"
            f"Your user name is {member.user.username}.\n"
        ),
        from_email=None,
        recipient_list=[member.user.email],
        fail_silently=True,
    )


@transaction.atomic
def member_remove(*, campaign: Campaign, user_id: int, role: str, actor: AbstractBaseUser | None) -> int:
    """Take a role away. A removed grader's judgments stay; their open assignments return to the
    pool (deleted, so the allocation gives the units to someone else). Returns how many returned.
    Recorded in the audit trail as `actor`'s."""
    member = CampaignRole.objects.filter(campaign=campaign, user_id=user_id, role=role).select_related("user").first()
    if member is None:
        raise NotFound(f"user {user_id} is not a {role} of campaign {campaign.pk}.", field="user", value=user_id)
    if (
        role == Role.ORGANIZER
        and not CampaignRole.objects.filter(campaign=campaign, role=Role.ORGANIZER).exclude(pk=member.pk).exists()
    ):
        raise InvalidValue("a campaign keeps at least one organizer.", field="user", value=user_id)
    returned = 0
    if role == Role.GRADER:
        returned, _ = Assignment.objects.filter(
            campaign=campaign, grader_id=user_id, status=AssignmentStatus.OPEN
        ).delete()
    audit_record(
        actor=actor,
        campaign=campaign,
        action="member.removed",
        target=member.user.get_username(),
        before={"user": member.user.get_username(), "role": role, "pseudonym": member.pseudonym},
        after={"open_assignments_returned": returned},
    )
    member.delete()
    return returned
