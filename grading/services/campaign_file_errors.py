"""The errors a campaign file can raise: one problem (row, field, value), or all of a file's problems.

The checker collects the problems of independent entries (CSV rows, queries, candidates, units,
people) so that the organizer sees every one at once; problems with the file as a whole (not
readable, not JSON, a wrong format) stop at once, as later checks would be meaningless.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from grading.errors import InvalidValue
from grading.jsontext import shown

T = TypeVar("T")
# Past this many problems a file is more wrong than right; the rest are counted, not listed.
MAX_REPORTED = 100


class CampaignFileError(InvalidValue):
    """A campaign file is malformed. `where` is a row ("line 4") or a path ("candidates[2].media")."""

    def __init__(self, where: str, field: str, value: Any, problem: str) -> None:
        if isinstance(value, str):
            value = shown(value) if len(value) <= 40 else shown(value) + "…"
        elif not isinstance(value, int | float | bool | type(None)):
            value = json.dumps(value, default=str)[:80]
        super().__init__(f"{where}, field {field!r}, value {value!r}: {problem}", field=field, value=value)
        self.where = where
        self.problem = problem

    def all_errors(self) -> list[CampaignFileError]:
        return [self]

    def reword(self, change: Callable[[str], str]) -> None:
        """Apply `change` to the message (e.g. to hide a server path)."""
        self.message = change(self.message)
        self.args = (self.message,)


class CampaignFileErrors(CampaignFileError):
    """Several problems in one file. `errors` lists them in file order (at most MAX_REPORTED; `not_shown`
    counts the rest); `where`, `field`, `value` and the start of the message are the first one's."""

    def __init__(self, errors: Iterable[CampaignFileError]) -> None:
        found: list[CampaignFileError] = []
        hidden = 0
        for error in errors:
            found.extend(error.all_errors())
            hidden += getattr(error, "not_shown", 0)
        if not found:
            raise ValueError("`errors` must hold at least one CampaignFileError")
        first = found[0]
        InvalidValue.__init__(self, first.message, field=first.field, value=first.value)
        self.where, self.problem = first.where, first.problem
        self.errors = found[:MAX_REPORTED]
        self.not_shown = len(found) - len(self.errors) + hidden
        self.reword(lambda text: text)

    def reword(self, change: Callable[[str], str]) -> None:
        """Apply `change` to every problem's message (e.g. to hide a server path) and rebuild the summary."""
        for error in self.errors:
            error.reword(change)
        more = len(self.errors) - 1 + self.not_shown
        self.message = self.errors[0].message + (f" (and {more} more problem{'s' * (more != 1)})" if more else "")
        self.args = (self.message,)

    def all_errors(self) -> list[CampaignFileError]:
        return list(self.errors)

    def lines(self) -> list[str]:
        """Every problem, one per entry, and a last line counting those not listed."""
        extra = [f"… and {self.not_shown} more problems not listed (only the first {MAX_REPORTED} are shown)"]
        return [e.message for e in self.errors] + (extra if self.not_shown else [])


class Collector:
    """Runs independent checks, keeping each one's CampaignFileError instead of stopping at the first."""

    def __init__(self) -> None:
        self.errors: list[CampaignFileError] = []

    def run(self, check: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """`check(*args, **kwargs)`, or None after noting its error."""
        try:
            return check(*args, **kwargs)
        except CampaignFileError as exc:
            self.add(exc)
            return None

    def add(self, error: CampaignFileError) -> None:
        self.errors.append(error)

    def raise_any(self) -> None:
        """Raise the one error found, or a CampaignFileErrors holding all of them."""
        if len(self.errors) == 1 and not isinstance(self.errors[0], CampaignFileErrors):
            raise self.errors[0]
        if self.errors:
            raise CampaignFileErrors(self.errors)

    def in_line_order(self) -> None:
        """Sort a CSV's problems: the campaign's first, then by line, then the rest (stable)."""

        def order(error: CampaignFileError) -> tuple[int, int]:
            line = error.where.removeprefix("line ")
            return (1, int(line)) if line.isdigit() else (0 if error.where == "campaign" else 2, 0)

        self.errors.sort(key=order)
