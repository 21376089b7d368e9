"""Who may call the grading API.

Every view needs an authenticated user (a session in the browser, `Authorization: Token <key>` for
scripts), except the token view itself. Which campaign, unit or query a user may touch is decided
by the selectors (a grader's own campaign, an organizer's campaign: grading.selectors), so that the
pages and the API refuse exactly the same things, with 404 for what a user may not know exists.
"""

from __future__ import annotations

from rest_framework.permissions import BasePermission, IsAuthenticated

API_PERMISSIONS: list[type[BasePermission]] = [IsAuthenticated]
