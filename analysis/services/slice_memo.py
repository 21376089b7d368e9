"""What a section computes of each slice of judgments, kept by a run for the next (docs/analysis.md,
"Reusing slices").

A section that reads the judgments a slice at a time and keeps per slice a few sums (per grader,
per query, per count row) computes them with ``pieces``: each slice's sums are kept with the run,
under a digest of the slice's rows (``Judgments.slice_keys``) and of the section's name, and the
campaign's next run takes those of the slices whose rows did not change instead of reading them
again. The section then combines the pieces as it would have combined them computed, so its
figures are the same to the last bit.

The store is the one the bootstrap's blocks are kept in (``metrics.KeptSums``: ``before`` lent by
the campaign's latest succeeded run, ``kept`` kept by this one, ``reuse.sums_lent`` and
``reuse.sums_keep``).
"""

from __future__ import annotations

import hashlib
import io
import struct
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import pandas as pd
import pyarrow as pa

from analysis.metrics import KeptSums

Piece = pd.DataFrame | None
ANALYSIS = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class LentUnits:
    """The per-unit rows stored by the run that lent a memo (``unit_blocks.RunUnits``), and the
    keys it kept: a slice whose mark (``sections.agreement._unit_rows_marks``) is among them had
    the same rows in that run, so its units' stored figures are this run's."""

    rows: Any
    keys: frozenset[str]


@dataclass
class SliceMemo:
    """A run's lent and kept pieces of slices, and how many of its slices' pieces it took."""

    store: KeptSums = field(default_factory=KeptSums)
    units: LentUnits | None = None
    taken: int = 0  # sections' sums of a slice, taken
    computed: int = 0  # and computed
    slices: int = 0  # the run's slices, once a section asked for their keys
    read: set[int] = field(default_factory=set)  # the places of those a section computed

    @property
    def slices_reused(self) -> int:
        """The slices whose every section's sums were taken: never read."""
        return self.slices - len(self.read)

    def lend(self, key: str) -> bytes | None:
        return self.store.before.get(key)

    def keep(self, key: str, data: bytes) -> None:
        self.store.kept[key] = data


KEY_PREFIX = "s:"  # the bootstrap's blocks' keys are 32 hexadecimal digits: these are told apart


def key(*parts: bytes | str) -> str:
    """A store key (``KEY_PREFIX`` and 30 hexadecimal digits: ``KeptSum.key`` holds 32) digesting
    ``parts`` and the analysis code: what code kept is taken only by the same code."""
    digest = hashlib.blake2b(code_digest(), digest_size=15)
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(struct.pack("<Q", len(data)))
        digest.update(data)
    return KEY_PREFIX + digest.hexdigest()


@cache
def code_digest() -> bytes:
    """A digest of every module of the analysis app: pieces kept by other code are not taken."""
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(ANALYSIS.rglob("*.py")):
        if "migrations" not in path.parts:
            digest.update(path.relative_to(ANALYSIS).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.digest()


class Sliced(Protocol):
    """What ``pieces`` reads: ``judgments.Judgments`` (not imported: it imports this module)."""

    def chunks(
        self, columns: Sequence[str] | None = None, only: Collection[int] | None = None
    ) -> Iterator[pd.DataFrame]: ...

    def slice_keys(self, memo: SliceMemo) -> list[str] | None: ...


def pieces(
    judgments: Sliced,
    memo: SliceMemo | None,
    name: str,
    columns: Sequence[str],
    compute: Callable[[pd.DataFrame], tuple[Piece, ...]],
) -> list[tuple[Piece, ...]]:
    """``compute`` of each slice of ``judgments`` (``Judgments.chunks(columns)``), in order: taken
    from ``memo`` for the slices whose rows a run before computed it of, computed for the others.
    Every slice's pieces are kept in ``memo`` for the next run. A slice's key is its rows' and the
    code's: ``name`` has to name whatever else ``compute`` depends on (none does yet)."""
    keys = judgments.slice_keys(memo) if memo is not None else None
    if keys is None:
        return [compute(chunk) for chunk in judgments.chunks(columns)]
    stored = [key("slice", name, k) for k in keys]
    lent = [memo.lend(k) for k in stored]
    out: list[tuple[Piece, ...] | None] = [None if data is None else decoded(data) for data in lent]
    missing = [i for i, data in enumerate(lent) if data is None]
    for i, chunk in zip(missing, judgments.chunks(columns, only=missing), strict=True):
        out[i] = compute(chunk)
        memo.keep(stored[i], encoded(out[i]))
    for i, data in enumerate(lent):
        if data is not None:
            memo.keep(stored[i], data)
    memo.taken += len(keys) - len(missing)
    memo.computed += len(missing)
    memo.slices = len(keys)
    memo.read.update(missing)
    return out  # type: ignore[return-value]


def encoded(frames: tuple[Piece, ...]) -> bytes:
    """Frames (or None) as bytes: each an Arrow IPC stream of the frame with its index (a range
    index as metadata alone), after its length (0 for None)."""
    out = io.BytesIO()
    out.write(struct.pack("<Q", len(frames)))
    for frame in frames:
        if frame is None:
            out.write(struct.pack("<Q", 0))
            continue
        sink = pa.BufferOutputStream()
        table = pa.Table.from_pandas(frame, preserve_index=None)
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        data = sink.getvalue().to_pybytes()
        out.write(struct.pack("<Q", len(data)))
        out.write(data)
    return out.getvalue()


def decoded(data: bytes) -> tuple[Piece, ...]:
    """The frames ``encoded`` wrote, with their dtypes and index."""
    view = memoryview(data)
    (n,), at = struct.unpack_from("<Q", view), 8
    frames: list[Piece] = []
    for _ in range(n):
        (size,), at = struct.unpack_from("<Q", view, at), at + 8
        if not size:
            frames.append(None)
            continue
        frames.append(pa.ipc.open_stream(pa.py_buffer(view[at : at + size])).read_all().to_pandas())
        at += size
    return tuple(frames)
