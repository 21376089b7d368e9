"""API tokens for scripts: one per user, issued on the first login through the API."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from rest_framework.authtoken.models import Token


@transaction.atomic
def token_get_or_create(*, user: AbstractBaseUser) -> Token:
    """The user's API token, created on first use; asking again returns the same token."""
    token, _ = Token.objects.get_or_create(user=user)
    return token
