"""System outputs: importing systems' orderings of a campaign's queries, to be scored against the graders'.

The file format is the ``orderings`` command's SYSTEMS.csv: a header ``query,system,rank,item`` and
one row per placed item, ``query`` the query's external id, ``item`` the candidate's external id,
rank 1 = first. An import is all or nothing: the first problem raises SystemOrderingsError naming
the line (or JSON row), the field and the value, and nothing is stored. Importing a system again
replaces all of its orderings.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from grading.errors import InvalidValue
from grading.models import Campaign, System, SystemOutput, Unit
from grading.models.choices import Scheme
from grading.services.audit import audit_record

COLUMNS = ("query", "system", "rank", "item")
NAME_MAX = System._meta.get_field("name").max_length


class SystemOrderingsError(InvalidValue):
    """A malformed system-orderings file. ``where`` is "line 4" (CSV) or "rows[3]" (JSON)."""

    def __init__(self, where: str, field: str, value: Any, problem: str) -> None:
        shown = value if isinstance(value, str | int | float | bool | type(None)) else str(value)
        super().__init__(f"{where}, field {field!r}, value {shown!r}: {problem}", field=field, value=shown)
        self.where = where

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "where": self.where}


@dataclass(frozen=True)
class SystemOrderingsSummary:
    systems: list[str]
    queries: int
    orderings: int
    replaced: int
    created_systems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "systems": self.systems,
            "queries": self.queries,
            "orderings": self.orderings,
            "replaced": self.replaced,
            "created_systems": self.created_systems,
        }


def csv_line(index: int) -> str:
    """Where row ``index`` (0-based, after the header) of a CSV file is: its line number."""
    return f"line {index + 2}"


def json_row(index: int) -> str:
    return f"rows[{index}]"


def system_orderings_rows_from_csv(data: bytes | str) -> list[dict[str, str]]:
    """The rows of a ``query,system,rank,item`` CSV file (UTF-8, a BOM is allowed).

    Raises SystemOrderingsError for text that is not UTF-8, a missing column or a row with too many
    fields; the values themselves are checked by :func:`system_orderings_import`.
    """
    return csv_rows(data, headers=[COLUMNS])


def csv_rows(
    data: bytes | str, *, headers: Sequence[Sequence[str]], error: type[SystemOrderingsError] = SystemOrderingsError
) -> list[dict[str, str]]:
    """The rows of a CSV file whose header names every column of one of ``headers`` (tried in turn;
    the first that fits gives the keys of the rows). UTF-8, a BOM is allowed."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise error("the file", "(encoding)", f"byte {exc.start}", "the file is not UTF-8 text") from None
    reader = csv.DictReader(io.StringIO(data.lstrip("\ufeff"), newline=""))
    header = [h.strip() for h in reader.fieldnames or []]
    columns = next((c for c in headers if all(name in header for name in c)), None)
    if columns is None:
        missing = [c for c in headers[0] if c not in header]
        wanted = " or ".join(",".join(c) for c in headers)
        raise error(
            "line 1",
            missing[0] if missing else "(header)",
            ",".join(header),
            f"missing column; the header must name {wanted}",
        )
    reader.fieldnames = header
    rows = []
    for index, row in enumerate(reader):
        if None in row:
            raise error(
                csv_line(index),
                "(row)",
                ",".join(row[None]),
                f"more fields than the {len(header)} columns of the header",
            )
        rows.append({c: row.get(c) for c in columns})
    return rows


@dataclass
class _Query:
    pk: int
    candidates: dict[str, str]  # candidate external id -> public id


def _queries(campaign: Campaign) -> dict[str, _Query]:
    queries: dict[str, _Query] = {}
    units = (
        Unit.objects.filter(campaign=campaign, query__isnull=False)
        .order_by()
        .values_list("query_id", "query__external_id", "candidate__external_id", "candidate__public_id")
    )
    for pk, ext, cand_ext, cand_public in units:
        queries.setdefault(ext, _Query(pk, {})).candidates[cand_ext] = cand_public
    for pk, ext in campaign.queries.values_list("pk", "external_id"):
        queries.setdefault(ext, _Query(pk, {}))
    return queries


def _text(row: Mapping[str, Any], column: str, where: str) -> str:
    value = row.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise SystemOrderingsError(where, column, "" if value is None else value, "empty value")
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise SystemOrderingsError(where, column, value, "expected text")
    return str(value).strip()


def _rank(row: Mapping[str, Any], where: str, k: int) -> int:
    raw = _text(row, "rank", where)
    try:
        rank = int(raw)
    except ValueError:
        raise SystemOrderingsError(where, "rank", raw, "a rank is a whole number, 1 = first") from None
    if rank < 1:
        raise SystemOrderingsError(where, "rank", raw, "a rank is a whole number, 1 = first")
    if rank > k:
        raise SystemOrderingsError(where, "rank", raw, f"the query has only {k} candidates, so ranks run 1..{k}")
    return rank


@dataclass
class _Plan:
    # (system, query external id) -> {rank: (candidate external id, public id)}, and the first row's place
    orderings: dict[tuple[str, str], dict[int, tuple[str, str]]] = field(default_factory=lambda: defaultdict(dict))
    first: dict[tuple[str, str], str] = field(default_factory=dict)


def _check_row(row: Mapping[str, Any], where: str, queries: dict[str, _Query], plan: _Plan) -> None:
    if not isinstance(row, Mapping):
        raise SystemOrderingsError(where, "(row)", row, f"a row is an object with keys {', '.join(COLUMNS)}")
    query_ext = _text(row, "query", where)
    query = queries.get(query_ext)
    if query is None:
        raise SystemOrderingsError(where, "query", query_ext, "no query of this campaign has this external id")
    system = _text(row, "system", where)
    if len(system) > NAME_MAX:
        raise SystemOrderingsError(where, "system", system, f"a system name has at most {NAME_MAX} characters")
    if len(query.candidates) < 2:
        raise SystemOrderingsError(where, "query", query_ext, "the query has fewer than 2 candidates to order")
    rank = _rank(row, where, len(query.candidates))
    item = _text(row, "item", where)
    if item not in query.candidates:
        raise SystemOrderingsError(where, "item", item, f"not a candidate of query {query_ext!r}")
    key = (system, query_ext)
    placed = plan.orderings[key]
    plan.first.setdefault(key, where)
    if rank in placed:
        raise SystemOrderingsError(
            where,
            "rank",
            rank,
            f"system {system!r} already placed {placed[rank][0]!r} at rank {rank} in query {query_ext!r}",
        )
    if any(item == ext for ext, _ in placed.values()):
        raise SystemOrderingsError(
            where, "item", item, f"system {system!r} ranks this item twice in query {query_ext!r}"
        )
    placed[rank] = (item, query.candidates[item])


def _check_complete(plan: _Plan, queries: dict[str, _Query]) -> None:
    for (system, query_ext), placed in plan.orderings.items():
        candidates = queries[query_ext].candidates
        missing = sorted(set(candidates) - {ext for ext, _ in placed.values()})
        if missing:
            raise SystemOrderingsError(
                plan.first[(system, query_ext)],
                "item",
                " ".join(missing),
                f"system {system!r} does not rank these candidates of query {query_ext!r}: an ordering must be a "
                f"permutation of the query's {len(candidates)} candidates",
            )


def system_orderings_check(
    *, campaign: Campaign, rows: Sequence[Mapping[str, Any]], where: Callable[[int], str] = csv_line
) -> dict[tuple[str, str], list[str]]:
    """Validate the rows; returns ``{(system, query external id): [candidate public ids, first = best]}``."""
    if campaign.scheme != Scheme.ORDERING:
        raise SystemOrderingsError(
            "the campaign", "scheme", str(campaign.scheme), "system orderings belong to ordering campaigns"
        )
    if not rows:
        raise SystemOrderingsError(where(0), "(row)", "", "the file has no rows")
    queries = _queries(campaign)
    plan = _Plan()
    for index, row in enumerate(rows):
        _check_row(row, where(index), queries, plan)
    _check_complete(plan, queries)
    return {key: [placed[r][1] for r in sorted(placed)] for key, placed in plan.orderings.items()}


def systems_get_or_create(*, campaign: Campaign, names: Sequence[str]) -> tuple[dict[str, System], list[str]]:
    """The campaign's systems of these names, created where new; and the names created."""
    systems, created = {}, []
    for name in names:
        systems[name], was_created = System.objects.get_or_create(campaign=campaign, name=name)
        if was_created:
            created.append(name)
    return systems, created


def system_orderings_import(
    *,
    campaign: Campaign,
    rows: Sequence[Mapping[str, Any]],
    where: Callable[[int], str] = csv_line,
    actor: AbstractBaseUser | None = None,
) -> SystemOrderingsSummary:
    """Store systems' orderings of the campaign's queries; all or nothing.

    Parameters
    ----------
    rows : mappings with keys ``query, system, rank, item`` (external ids of query and candidate;
        rank 1 = first), one per placed item.
    where : names row ``i`` in error messages (``csv_line``: "line i+2"; ``json_row``: "rows[i]").

    Each system named in the rows gets exactly the orderings given (its earlier orderings, of any
    query, are replaced); a System row is created for a new name. Recorded in the audit trail as
    `actor`'s (None: a command).
    """
    orderings = system_orderings_check(campaign=campaign, rows=rows, where=where)
    query_pks = dict(campaign.queries.values_list("external_id", "pk"))
    names = sorted({system for system, _ in orderings})
    with transaction.atomic():
        systems, created = systems_get_or_create(campaign=campaign, names=names)
        replaced, _ = SystemOutput.objects.filter(system__in=systems.values(), unit__isnull=True).delete()
        SystemOutput.objects.bulk_create(
            [
                SystemOutput(system=systems[system], query_id=query_pks[query_ext], ordering=items)
                for (system, query_ext), items in sorted(orderings.items())
            ]
        )
        summary = SystemOrderingsSummary(
            systems=names,
            queries=len({q for _, q in orderings}),
            orderings=len(orderings),
            replaced=replaced,
            created_systems=created,
        )
        audit_record(
            actor=actor,
            campaign=campaign,
            action="systems.orderings_uploaded",
            target=", ".join(names),
            after={"systems": names, "queries": summary.queries, "orderings": summary.orderings, "replaced": replaced},
        )
    return summary
