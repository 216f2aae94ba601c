"""Time covered by a set of intervals, overlaps counted once."""

from __future__ import annotations

from collections.abc import Iterable


def union_length(intervals: Iterable[tuple[int, int]]) -> int:
    """Length of the union of half-open intervals ``[lo, hi)``; an empty or reversed interval
    (``hi <= lo``) covers nothing."""
    covered = 0
    run_lo: int | None = None
    run_hi = 0
    for lo, hi in sorted(intervals):
        if hi <= lo:
            continue
        if run_lo is None or lo > run_hi:
            if run_lo is not None:
                covered += run_hi - run_lo
            run_lo, run_hi = lo, hi
        else:
            run_hi = max(run_hi, hi)
    if run_lo is not None:
        covered += run_hi - run_lo
    return covered
