"""Errors raised by grading services. Each says what was wrong and where; the API maps them to HTTP."""

from __future__ import annotations

from typing import Any


class GradingError(Exception):
    http_status = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.value = value

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "detail": self.message}
        if self.field is not None:
            out["field"] = self.field
            out["value"] = (
                self.value if isinstance(self.value, str | int | float | bool | type(None)) else repr(self.value)
            )
        return out


class InvalidValue(GradingError):
    code = "invalid"


class NotFound(GradingError):
    http_status = 404
    code = "not_found"


class NotAssigned(GradingError):
    http_status = 403
    code = "not_assigned"


class NotOrganizer(GradingError):
    http_status = 403
    code = "not_organizer"


class NotAllowed(GradingError):
    http_status = 403
    code = "forbidden"


class CampaignClosed(GradingError):
    http_status = 403
    code = "campaign_closed"


class EventConflict(GradingError):
    """The event id was already used for a different event."""

    http_status = 409
    code = "id_conflict"


class StepNotAllowed(GradingError):
    """A status step the campaign's current status does not allow (or opening with nothing to
    grade): the request is well formed, the campaign's state refuses it."""

    http_status = 409
    code = "step_not_allowed"


class CampaignLocked(GradingError):
    """A change to what defines the instrument (scheme, items) after grading has started."""

    http_status = 409
    code = "campaign_locked"
