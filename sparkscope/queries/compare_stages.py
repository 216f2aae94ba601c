"""The compare page's stages: two runs' stages lined up by call site, with their deltas."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from sqlalchemy import select
from sqlalchemy.orm import Session

from sparkscope.models.application import Stage

#: The figures shown for each stage, in the table's order: (field, label, unit).
STAGE_FIGURES: tuple[tuple[str, str, str], ...] = (
    ("duration_ms", "duration", "ms"),
    ("input_bytes", "input", "bytes"),
    ("shuffle_read_bytes", "shuffle read", "bytes"),
    ("shuffle_write_bytes", "shuffle write", "bytes"),
    ("spill_bytes", "spill", "bytes"),
    ("num_tasks", "tasks", "count"),
)

_LINE = re.compile(r":\d+$")
#: Runs with more stages than this pair equal names in order only, without aligning the two
#: sequences first (the alignment costs up to quadratic time in the number of stages).
ALIGN_LIMIT = 200


@dataclass(frozen=True)
class ComparedStage:
    """One stage of one run, as the comparison reads it (its latest attempt)."""

    stage_id: int
    attempt_id: int
    name: str
    status: str
    submitted_ms: int | None
    duration_ms: int | None
    input_bytes: int
    shuffle_read_bytes: int
    shuffle_write_bytes: int
    spill_bytes: int
    num_tasks: int


@dataclass(frozen=True)
class StagePair:
    """A stage of the left run and the right run's stage with the same call site; one side is
    None when the other run has no such stage. ``by`` says how they were matched: ``name`` (the
    whole call site), ``call site`` (the same file and operation, another line) or ``""``."""

    left: ComparedStage | None
    right: ComparedStage | None
    by: str

    @property
    def name(self) -> str:
        """The call site (the left one when both exist)."""
        side = self.left or self.right
        assert side is not None
        return side.name

    def delta(self, figure: str) -> int | None:
        """right - left for one of STAGE_FIGURES, when both sides have it."""
        if self.left is None or self.right is None:
            return None
        lv, rv = getattr(self.left, figure), getattr(self.right, figure)
        return None if lv is None or rv is None else rv - lv

    @property
    def change_ms(self) -> int:
        """How much the duration moved: the delta, or a one-sided stage's whole duration."""
        delta = self.delta("duration_ms")
        if delta is not None:
            return abs(delta)
        side = self.left or self.right
        return (side.duration_ms or 0) if side else 0


def call_site(name: str) -> str:
    """A stage name without its line number: ``count at Foo.scala:12`` -> ``count at Foo.scala``,
    so a stage still matches after the code above it moved."""
    return _LINE.sub("", name.strip())


def _duration(submitted: int | None, launched: int | None, completed: int | None) -> int | None:
    start = launched or submitted
    if start is None or completed is None or completed < start:
        return None
    return completed - start


def stage_runs(session: Session, application_pks: list[int]) -> dict[int, list[ComparedStage]]:
    """Each application's stages that ran (skipped ones left out), the latest attempt of each, in
    order of submission, in one read."""
    rows = session.execute(
        select(
            Stage.application_id,
            Stage.stage_id,
            Stage.attempt_id,
            Stage.name,
            Stage.status,
            Stage.num_tasks,
            Stage.submission_time_ms,
            Stage.first_task_launched_time_ms,
            Stage.completion_time_ms,
            Stage.input_bytes,
            Stage.shuffle_read_bytes,
            Stage.shuffle_write_bytes,
            Stage.memory_bytes_spilled,
            Stage.disk_bytes_spilled,
        ).where(Stage.application_id.in_(application_pks))
    )
    latest: dict[int, dict[int, ComparedStage]] = {pk: {} for pk in application_pks}
    for r in rows:
        mine = latest[r.application_id]
        if r.status == "SKIPPED" or (
            r.stage_id in mine and mine[r.stage_id].attempt_id > r.attempt_id
        ):
            continue
        mine[r.stage_id] = ComparedStage(
            stage_id=r.stage_id,
            attempt_id=r.attempt_id,
            name=r.name or "",
            status=r.status,
            submitted_ms=r.submission_time_ms,
            duration_ms=_duration(
                r.submission_time_ms, r.first_task_launched_time_ms, r.completion_time_ms
            ),
            input_bytes=r.input_bytes,
            shuffle_read_bytes=r.shuffle_read_bytes,
            shuffle_write_bytes=r.shuffle_write_bytes,
            spill_bytes=r.memory_bytes_spilled + r.disk_bytes_spilled,
            num_tasks=r.num_tasks,
        )
    return {pk: sorted(mine.values(), key=_submission_order) for pk, mine in latest.items()}


def _submission_order(s: ComparedStage) -> tuple[int, int]:
    return (s.submitted_ms if s.submitted_ms is not None else 2**62, s.stage_id)


def _pair_by(
    left: Iterable[ComparedStage], right: Iterable[ComparedStage], key: str
) -> tuple[list[StagePair], list[ComparedStage], list[ComparedStage]]:
    """Pair stages whose ``key`` (name or call site) is equal, the n-th left one of a key with the
    n-th right one in submission order; returns the pairs and what is left on each side."""

    def group(stages: Iterable[ComparedStage]) -> dict[str, list[ComparedStage]]:
        out: dict[str, list[ComparedStage]] = defaultdict(list)
        for s in stages:
            out[s.name if key == "name" else call_site(s.name)].append(s)
        return out

    lg, rg = group(left), group(right)
    pairs: list[StagePair] = []
    left_over: list[ComparedStage] = []
    right_over: list[ComparedStage] = []
    for k in lg.keys() | rg.keys():
        ls, rs = lg.get(k, []), rg.get(k, [])
        pairs += [StagePair(a, b, key) for a, b in zip(ls, rs, strict=False)]
        left_over += ls[len(rs) :]
        right_over += rs[len(ls) :]
    return pairs, left_over, right_over


def _aligned(
    left: Sequence[ComparedStage], right: Sequence[ComparedStage]
) -> tuple[list[StagePair], list[ComparedStage], list[ComparedStage]]:
    """Pair the stages of the longest runs of equal names the two sequences share (in submission
    order), so that a stage added or removed does not shift every later namesake by one."""
    if len(left) > ALIGN_LIMIT or len(right) > ALIGN_LIMIT:
        return [], list(left), list(right)
    matcher = SequenceMatcher(None, [s.name for s in left], [s.name for s in right], autojunk=False)
    pairs: list[StagePair] = []
    used_left: set[int] = set()
    used_right: set[int] = set()
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            pairs.append(StagePair(left[block.a + k], right[block.b + k], "name"))
            used_left.add(block.a + k)
            used_right.add(block.b + k)
    rest_left = [s for i, s in enumerate(left) if i not in used_left]
    rest_right = [s for i, s in enumerate(right) if i not in used_right]
    return pairs, rest_left, rest_right


def pair_stages(left: Sequence[ComparedStage], right: Sequence[ComparedStage]) -> list[StagePair]:
    """Both runs' stages lined up: equal names first (the longest stretches the two runs share,
    then the rest of each name in submission order), then the same call site on another line;
    pairs by the largest duration change first, then the stages of one run only (left, then
    right), longest first."""
    aligned, l_rest, r_rest = _aligned(left, right)
    by_name, l_rest, r_rest = _pair_by(l_rest, r_rest, "name")
    by_name += aligned
    by_site, l_rest, r_rest = _pair_by(l_rest, r_rest, "call site")
    pairs = sorted(by_name + by_site, key=lambda p: (-p.change_ms, p.name))
    lonely = [StagePair(s, None, "") for s in l_rest] + [StagePair(None, s, "") for s in r_rest]
    lonely.sort(key=lambda p: (p.right is not None, -p.change_ms, p.name))
    return pairs + lonely


def compare_stages(session: Session, left_pk: int, right_pk: int) -> list[StagePair]:
    """The two applications' stages lined up (see :func:`pair_stages`)."""
    runs = stage_runs(session, [left_pk, right_pk])
    return pair_stages(runs[left_pk], runs[right_pk])
