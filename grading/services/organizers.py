"""Who may create campaigns (docs/design.md §1): staff users, and users an admin made organizers.

Being an organizer of the site is Django's `grading.add_campaign` permission, given to the user
directly; an admin grants and withdraws it from the Organizers page (or the Django admin). Each
change is recorded in the audit trail as the admin's.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import transaction

from grading.errors import InvalidValue, NotAllowed, NotFound
from grading.models import Campaign
from grading.services.audit import audit_record

PERMISSION = "add_campaign"


def can_create_campaigns(user: AbstractBaseUser) -> bool:
    return bool(user.is_staff or user.has_perm(f"grading.{PERMISSION}"))


def create_permission() -> Permission:
    """The permission that makes a user an organizer (created here if migrations have not yet)."""
    content_type = ContentType.objects.get_for_model(Campaign)
    permission, _ = Permission.objects.get_or_create(
        content_type=content_type, codename=PERMISSION, defaults={"name": "Can add campaign"}
    )
    return permission


@transaction.atomic
def organizer_set(*, username: str, organizer: bool, actor: AbstractBaseUser) -> AbstractBaseUser:
    """Make the user named `username` an organizer (may create campaigns), or no longer one.
    Only staff may; staff users create campaigns anyway, so they are not changed."""
    if not getattr(actor, "is_staff", False):
        raise NotAllowed("only admins (staff users) make people organizers.", field="actor", value=actor.get_username())
    name = (username or "").strip()
    user = get_user_model().objects.filter(username=name).first()
    if user is None:
        raise NotFound(f"there is no user named {name!r}.", field="username", value=name)
    if not user.is_active:
        raise InvalidValue(f"the account {name!r} is deactivated.", field="username", value=name)
    if user.is_staff:
        raise InvalidValue(f"{name!r} is an admin (staff) and creates campaigns already.", field="username", value=name)
    permission = create_permission()
    had = user.user_permissions.filter(pk=permission.pk).exists()
    if had == organizer:
        return user
    if organizer:
        user.user_permissions.add(permission)
    else:
        user.user_permissions.remove(permission)
    audit_record(
        actor=actor,
        campaign=None,
        action="organizer.granted" if organizer else "organizer.withdrawn",
        target=user.get_username(),
        before={"can_create_campaigns": had},
        after={"can_create_campaigns": organizer},
    )
    return user
