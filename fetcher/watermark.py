"""The per-server watermark: the range of end times within which every listed app is loaded.

A listing pass asks for every completed application that ended at or after some time (or the
newest N); :class:`Frontier` follows, over the pass's applications sorted oldest first, how far
every one of them is *done* (stored with the listed ``lastUpdated``, recorded as failed, or given
up). The covered range ``[covered_from_ms, covered_to_ms]`` stored in ``fetch_watermark`` is only
ever widened by such a done prefix, in the same transaction as the application (or failure) that
completes it. So whatever point a run is killed at, every application listed below the watermark
is in the database or in ``fetch_failure``, and the next run lists from the watermark (minus
``fetcher.overlap_minutes``) on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from sqlalchemy import Table, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from fetcher.parse.entry import AppEntry
from sparkscope.db import now_ms
from sparkscope.models.fetch import FetchWatermark


@dataclass(frozen=True)
class Coverage:
    """The stored range of one server."""

    from_ms: int
    to_ms: int
    reconciled_at_ms: int | None


_TABLE = cast(Table, FetchWatermark.__table__)
_READ = select(_TABLE.c.covered_from_ms, _TABLE.c.covered_to_ms, _TABLE.c.reconciled_at_ms).where(
    _TABLE.c.server_id == bindparam("server_id")
)


def read(session: Session, server_id: int) -> Coverage | None:
    """The server's covered range, or None before its first complete pass."""
    row = session.execute(_READ, {"server_id": server_id}).first()
    if row is None:
        return None
    return Coverage(row.covered_from_ms, row.covered_to_ms, row.reconciled_at_ms)


def merged(old: Coverage | None, lo: int, hi: int) -> tuple[int, int] | None:
    """The range after a pass covered ``[lo, hi]``; None when it adds nothing contiguous."""
    if hi < lo:
        return None
    if old is None:
        return lo, hi
    if lo > old.to_ms + 1 or hi < old.from_ms - 1:
        return None  # a gap in between: keep the stored range, later runs list the gap
    new = (min(lo, old.from_ms), max(hi, old.to_ms))
    return None if new == (old.from_ms, old.to_ms) else new


@dataclass(frozen=True)
class Advance:
    """A watermark change to write in the same transaction as an application."""

    lo: int
    hi: int
    reconciled: bool = False


def apply(
    session: Session, server_id: int, advance: Advance | None, old: Coverage | None = None
) -> Coverage | None:
    """Widen the server's range by a done prefix (inside the caller's transaction); returns the
    range written (None when nothing is). ``old``: the stored range, when the caller knows it
    (:class:`Marks`), else it is read."""
    if advance is None:
        return None
    if old is None:
        old = read(session, server_id)
    new = merged(old, advance.lo, advance.hi)
    now = now_ms()
    reconciled_at = now if advance.reconciled else (old.reconciled_at_ms if old else None)
    if new is None:
        if not advance.reconciled or old is None:
            return None
        new = (old.from_ms, old.to_ms)
    values = {
        "covered_from_ms": new[0],
        "covered_to_ms": new[1],
        "reconciled_at_ms": reconciled_at,
        "updated_at_ms": now,
    }
    session.execute(_upsert(session.get_bind().dialect.name), {"server_id": server_id, **values})
    return Coverage(new[0], new[1], reconciled_at)


class Marks:
    """One run's writes of a server's range: the stored range is read once, then known from what
    the run's committed transactions wrote (a fetch holds the fetch lock: no one else writes it)."""

    def __init__(self, server_id: int) -> None:
        self.server_id = server_id
        self._known: Coverage | None = None

    def apply(self, session: Session, advance: Advance | None) -> Coverage | None:
        """:func:`apply` in the caller's transaction; pass what it returns to :meth:`committed`
        once that transaction has committed."""
        return apply(session, self.server_id, advance, self._known)

    def committed(self, written: Coverage | None) -> None:
        """The transaction that wrote ``written`` committed: that is the stored range now."""
        if written is not None:
            self._known = written


@cache
def _upsert(dialect: str) -> Any:
    """INSERT or UPDATE of a server's range (built once per dialect)."""
    stmt = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(_TABLE)
    columns = ("covered_from_ms", "covered_to_ms", "reconciled_at_ms", "updated_at_ms")
    return stmt.on_conflict_do_update(
        index_elements=["server_id"], set_={c: stmt.excluded[c] for c in columns}
    )


class Frontier:
    """Which prefix (oldest first) of one listing pass is done."""

    def __init__(
        self, entries: Iterable[AppEntry], covered_from_ms: int, reconcile: bool = False
    ) -> None:
        self.entries = sorted(entries, key=_end)
        self.lo = covered_from_ms
        self.reconcile = reconcile
        self._done: set[tuple[str, str]] = set()
        self._next = 0

    def done(self, key: tuple[str, str]) -> None:
        """Mark one application of the pass as done."""
        self._done.add(key)
        while self._next < len(self.entries) and self.entries[self._next].key in self._done:
            self._next += 1

    def advance_if_done(self, key: tuple[str, str]) -> Advance | None:
        """The watermark change that marking ``key`` done would allow (without marking it)."""
        return self.advance_if_done_many([key])

    def advance_if_done_many(self, keys: Iterable[tuple[str, str]]) -> Advance | None:
        """The watermark change that marking all of ``keys`` done would allow (without marking
        them): None unless one of them is the oldest one missing."""
        added = {key for key in keys if key not in self._done}
        self._done |= added
        i = self._next
        while i < len(self.entries) and self.entries[i].key in self._done:
            i += 1
        self._done -= added
        return self._advance(i) if i > self._next else None

    def advance_now(self) -> Advance | None:
        """The watermark change for what is done so far (for a pass with nothing to load)."""
        return self._advance(self._next)

    def _advance(self, upto: int) -> Advance | None:
        if not self.entries:
            return Advance(self.lo, self.lo - 1, True) if self.reconcile else None
        if upto >= len(self.entries):
            return Advance(self.lo, _end(self.entries[-1]), self.reconcile)
        hi = _end(self.entries[upto]) - 1  # every entry ending before the first missing one
        return Advance(self.lo, hi) if hi >= self.lo else None


def _end(entry: AppEntry) -> int:
    return entry.end_time_ms or 0
