"""What changed in a run against the earlier runs of its key it was predicted from, whatever its
verdict: the settings, the size it ran at, its input, the time per byte of its stages, its failures
and its findings.

Pure: features in, JSON-able items out (stored with the run's prediction at fetch/analyze time and
only read by the pages). The regression causes of :mod:`sparkscope.advisor.predict.verdict` are
the plain-language subset of these that can explain a slower run; this is the whole list a person
checks when a run looks different, normal or not.

Each item is a dict with a ``kind``:

- ``setting``: ``key``, ``before``, ``after`` (None when unset), against the latest earlier run;
- ``size``: ``what`` (``executors`` or ``cores``), ``before``, ``after``, against the latest run;
- ``input``: ``before`` (median of the latest runs), ``after``, ``ratio`` (bytes read from input),
  when it moved by at least ``INPUT_CHANGE`` either way;
- ``stage``: ``label``, ``ratio`` of time per byte read, ``before_ms``, ``after_ms``,
  ``before_bytes``, ``after_bytes``, against the latest run, for stages that carry at least
  ``STAGE_SHARE`` of the run's stage time and changed by at least ``STAGE_CHANGE`` either way
  (the largest changes first, at most ``MAX_STAGES``);
- ``failures``: ``failed_tasks``, ``failed_stages`` and the most of the earlier runs
  (``before_tasks``, ``before_stages``), when there are more than before;
- ``finding``: ``heuristic`` and ``change`` (``new`` or ``gone``), against the latest run.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from statistics import median
from typing import Any

from sparkscope.advisor.predict.features import KEY_SETTINGS, RunFeatures

#: Input at least this many times (or at most its inverse) the median of the latest runs.
INPUT_CHANGE = 1.25
#: Time per byte read at least this many times (or at most its inverse) the latest run's.
STAGE_CHANGE = 1.5
#: Share of the run's stage time a stage must carry to be compared.
STAGE_SHARE = 0.1
#: Bytes a stage must read in both runs for its time per byte to mean something.
MIN_STAGE_BYTES = 1 << 20
MAX_STAGES = 3
#: Earlier runs whose median input the run is compared with.
RECENT = 5


def what_changed(run: RunFeatures, earlier: Sequence[RunFeatures]) -> list[dict[str, Any]]:
    """The changes of ``run`` against ``earlier`` (its key's earlier successful runs, oldest
    first); empty when there is no earlier run."""
    if not earlier:
        return []
    last = earlier[-1]
    recent = earlier[-RECENT:]
    out: list[dict[str, Any]] = [
        {"kind": "setting", "key": k, "before": last.settings.get(k), "after": run.settings.get(k)}
        for k in KEY_SETTINGS
        if run.settings.get(k) != last.settings.get(k)
    ]
    for what in ("executors", "cores"):
        before, after = last.values.get(what), run.values.get(what)
        if before is not None and after is not None and before != after:
            out.append({"kind": "size", "what": what, "before": before, "after": after})
    base = median(r.values.get("input_bytes", 0.0) for r in recent)
    now = run.values.get("input_bytes", 0.0)
    if base > 0 and now > 0 and not 1 / INPUT_CHANGE < now / base < INPUT_CHANGE:
        out.append({"kind": "input", "before": base, "after": now, "ratio": now / base})
    out.extend(_stages(run, last))
    before_tasks = max(r.failed_tasks for r in recent)
    before_stages = max(r.failed_stages for r in recent)
    if run.failed_tasks > before_tasks or run.failed_stages > before_stages:
        out.append(
            {
                "kind": "failures",
                "failed_tasks": run.failed_tasks,
                "failed_stages": run.failed_stages,
                "before_tasks": before_tasks,
                "before_stages": before_stages,
            }
        )
    return out


def _stages(run: RunFeatures, last: RunFeatures) -> list[dict[str, Any]]:
    prev = {w[0]: w for w in last.stage_work}
    total = sum(int(w[2]) for w in run.stage_work) or 1
    found = []
    for label, nbytes, ms in run.stage_work:
        p = prev.get(label)
        if p is None or ms < STAGE_SHARE * total or p[2] <= 0 or ms <= 0:
            continue
        if nbytes < MIN_STAGE_BYTES or p[1] < MIN_STAGE_BYTES:
            continue
        ratio = (ms / nbytes) / (p[2] / p[1])
        if 1 / STAGE_CHANGE < ratio < STAGE_CHANGE:
            continue
        found.append(
            {
                "kind": "stage",
                "label": label,
                "ratio": ratio,
                "before_ms": int(p[2]),
                "after_ms": int(ms),
                "before_bytes": int(p[1]),
                "after_bytes": int(nbytes),
            }
        )
    found.sort(key=lambda s: -max(s["ratio"], 1 / s["ratio"]))
    return found[:MAX_STAGES]


def finding_changes(now: Collection[str], before: Collection[str] | None) -> list[dict[str, Any]]:
    """Heuristics that found something in the run and not in the latest earlier one (``new``),
    and the other way round (``gone``); nothing when there is no earlier run."""
    if before is None:
        return []
    new = [
        {"kind": "finding", "heuristic": h, "change": "new"} for h in sorted(set(now) - set(before))
    ]
    gone = [
        {"kind": "finding", "heuristic": h, "change": "gone"}
        for h in sorted(set(before) - set(now))
    ]
    return new + gone
