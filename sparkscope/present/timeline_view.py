"""The timeline page's words and chart: what the slot curves say in sentences, and one Plotly
figure with allocated and busy slots above the jobs and stage attempts as bars on the same axis
(seconds after the application's start). Plain data in, strings and JSON-able dicts out."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sparkscope.present.display import fmt_count, fmt_duration_ms, fmt_fraction, fmt_hours

#: Steps drawn at most; a longer curve (every task of a big stage) is drawn as bin means.
MAX_STEPS = 2000
DRAW_BINS = 1000
#: Pixels per lane of bars, and the height of the slots panel.
LANE_PX = 18
SLOTS_PX = 260
COLORS = {
    "allocated": "#455a64",
    "busy": "#42a5f5",
    "job": "#5c6bc0",
    "stage": "#78909c",
    "failed": "#c62828",
}
METHODS = {
    "tasks": "Busy slots come from every task's launch and finish (the event log stored them all):"
    " exact concurrency.",
    "stages": "Busy slots are estimated from the stage attempts: each is taken as busy at its task"
    " time ÷ its span (first task launch, or submission, to completion), capped by the allocated"
    " slots. Concurrency inside a stage (stragglers) is averaged out.",
    "mixed": "Busy slots come from every task's times for {exact} stage attempts and are"
    " estimated from the span of {estimated} (task time ÷ span), capped by the allocated slots.",
}


class Slots(Protocol):
    """What the page reads of a :class:`sparkscope.accounting.timeline.SlotTimeline` (the
    accounting layer sits above this one): step curves on ``times`` and the figures."""

    @property
    def start_ms(self) -> int: ...
    @property
    def end_ms(self) -> int: ...
    @property
    def times(self) -> Any: ...
    @property
    def allocated(self) -> Any: ...
    @property
    def busy(self) -> Any: ...
    @property
    def exact_stages(self) -> int: ...
    @property
    def estimated_stages(self) -> int: ...
    @property
    def tail_start_ms(self) -> int: ...
    @property
    def longest_gap(self) -> tuple[int, int] | None: ...
    @property
    def duration_ms(self) -> int: ...
    @property
    def method(self) -> str: ...
    @property
    def allocated_slot_ms(self) -> float: ...
    @property
    def idle_fraction(self) -> float | None: ...
    @property
    def idle_core_hours(self) -> float: ...
    @property
    def tail_ms(self) -> int: ...
    @property
    def tail_share(self) -> float | None: ...


def summary_sentences(t: Slots, tail_slots: float, tail_share: float) -> list[tuple[str, str]]:
    """(id, sentence) of each figure the page states above its chart; the serial tail is the
    final stretch with at most ``tail_slots`` or ``tail_share`` of the allocated slots busy."""
    out = []
    if t.idle_fraction is None:
        out.append(("idle", "Idle capacity: unknown (no executor held a task slot)."))
    else:
        out.append(
            (
                "idle",
                f"Idle capacity: {fmt_fraction(t.idle_fraction)} of the allocated task-slot time"
                f" ({fmt_hours(t.idle_core_hours)} of"
                f" {fmt_hours(t.allocated_slot_ms / 3_600_000)} core-hours) ran no task.",
            )
        )
    limit = f"at most {tail_slots:g} slot or {fmt_fraction(tail_share, 0)} of the allocated slots"
    if t.duration_ms <= 0:
        out.append(("tail", "Serial tail: none (the run has no duration)."))
    elif t.tail_ms == 0:
        out.append(("tail", f"Serial tail: none (the run ended busier than {limit})."))
    elif t.tail_share is not None and t.tail_share < 0.01:
        out.append(
            (
                "tail",
                f"Serial tail: negligible (the last {fmt_duration_ms(t.tail_ms)},"
                f" under 1% of the run, ran {limit} busy).",
            )
        )
    elif t.tail_start_ms == t.start_ms:
        out.append(("tail", f"Serial tail: the whole run ({limit} busy throughout)."))
    else:
        out.append(
            (
                "tail",
                f"Serial tail: the last {fmt_duration_ms(t.tail_ms)}"
                f" ({fmt_fraction(t.tail_share)} of the run, from"
                f" +{fmt_duration_ms(t.tail_start_ms - t.start_ms)}) ran {limit} busy.",
            )
        )
    gap = t.longest_gap
    if gap is None:
        out.append(("gap", "Longest gap with no stage running: none."))
    else:
        share = (gap[1] - gap[0]) / t.duration_ms if t.duration_ms > 0 else None
        out.append(
            (
                "gap",
                f"Longest gap with no stage running: {fmt_duration_ms(gap[1] - gap[0])}"
                f" ({fmt_fraction(share)} of the run), from +{fmt_duration_ms(gap[0] - t.start_ms)}"
                f" to +{fmt_duration_ms(gap[1] - t.start_ms)}.",
            )
        )
    return out


def method_sentence(t: Slots) -> str:
    """Which of the two ways the busy slots were computed, in words."""
    return METHODS[t.method].format(
        exact=fmt_count(t.exact_stages), estimated=fmt_count(t.estimated_stages)
    )


def lanes(spans: Sequence[tuple[float, float]]) -> list[int]:
    """A lane per span (in the given order) so that spans in one lane never overlap: each takes
    the first lane free at its start, spans taken by start."""
    ends: list[float] = []
    out = [0] * len(spans)
    for i in sorted(range(len(spans)), key=spans.__getitem__):
        a, b = spans[i]
        for lane, e in enumerate(ends):
            if e <= a:
                ends[lane] = b
                break
        else:
            lane = len(ends)
            ends.append(b)
        out[i] = lane
    return out


def binned(timeline: Slots, bins: int) -> tuple[Any, Any, Any]:
    """(bin edges, mean allocated, mean busy per bin) over ``bins`` equal bins: a curve of at most
    ``bins`` steps to draw, with the same slot-time as the timeline in every bin."""
    import numpy as np

    edges = np.linspace(timeline.start_ms, timeline.end_ms, bins + 1)
    width = max(1e-9, (timeline.end_ms - timeline.start_ms) / bins)

    def cumulative(values: Any) -> Any:
        # Area from the start up to each edge, by interpolating the running integral.
        area = np.concatenate([[0.0], np.cumsum(values * np.diff(timeline.times))])
        return np.interp(edges, timeline.times.astype(float), area)

    return (
        edges,
        np.diff(cumulative(timeline.allocated)) / width,
        np.diff(cumulative(timeline.busy)) / width,
    )


def _curve(t: Slots) -> tuple[list[float], list[float], list[float], bool]:
    if len(t.allocated) <= MAX_STEPS:
        times, alloc, busy = t.times, t.allocated, t.busy
        binned_ = False
    else:
        times, alloc, busy = binned(t, DRAW_BINS)
        binned_ = True
    # Millisecond x and 1/1000-slot y: the figure's JSON stays short.
    xs = [round((float(x) - t.start_ms) / 1000, 3) for x in times]
    ys_alloc = [round(float(v), 3) for v in alloc]
    ys_busy = [round(float(v), 3) for v in busy]
    # The step drawn to the end: each curve's last value repeated at the end time.
    return xs, ys_alloc + ys_alloc[-1:], ys_busy + ys_busy[-1:], binned_


@dataclass
class Bars:
    """Bars of one kind (jobs or stage attempts), one list per column: start and end in seconds
    after the application's start, and per bar its hover data: the URL a click opens ("" for
    none), label, name and status (escaped: Plotly reads a few HTML tags in hover text), tasks,
    start."""

    kind: str
    start: list[float] = field(default_factory=list)
    end: list[float] = field(default_factory=list)
    failed: list[bool] = field(default_factory=list)
    hover: list[list[Any]] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        kind: str,
        spans: Sequence[tuple[float, float]],
        rows: Sequence[tuple[str, str, str | None, str, int]],
    ) -> Bars:
        """Bars from (start, end) seconds and (url, label, name, status, tasks) per bar, column
        by column (a timeline draws thousands)."""
        start = [round(a, 3) for a, _b in spans]
        end = [max(round(b, 3), a) for a, (_a, b) in zip(start, spans, strict=True)]
        # Plotly reads a few HTML tags in hover text: another person's names are escaped.
        statuses = {st: html.escape(st) for *_r, st, _n in rows}
        hover = [
            [url, label, html.escape(name) if name else "", statuses[st], tasks, a]
            for (url, label, name, st, tasks), a in zip(rows, start, strict=True)
        ]
        return cls(kind, start, end, [r[3] == "FAILED" for r in rows], hover)

    def traces(self, axis: str) -> tuple[list[dict[str, Any]], int]:
        """(bar traces, one for the kind and one for its failed ones, and the lanes they take)."""
        lane_of = lanes(list(zip(self.start, self.end, strict=True)))
        traces = []
        for failed in (False, True):
            idx = [i for i, f in enumerate(self.failed) if f == failed]
            if not idx:
                continue
            traces.append(
                {
                    "type": "bar",
                    "orientation": "h",
                    "name": f"failed {self.kind}" if failed else self.kind,
                    "legendgroup": self.kind,
                    "yaxis": axis,
                    "base": [self.start[i] for i in idx],
                    "x": [max(round(self.end[i] - self.start[i], 3), 0.001) for i in idx],
                    "y": [lane_of[i] for i in idx],
                    "width": 0.8,
                    "marker": {"color": COLORS["failed" if failed else self.kind]},
                    "customdata": [self.hover[i] for i in idx],
                    "hovertemplate": (
                        "<b>%{customdata[1]}</b> (%{customdata[3]})<br>%{customdata[2]}<br>"
                        "from +%{customdata[5]:,.1f} s for %{x:,.1f} s, %{customdata[4]:,} tasks"
                        "<extra></extra>"
                    ),
                }
            )
        return traces, max(lane_of, default=-1) + 1


def timeline_figure(
    t: Slots,
    jobs: Sequence[Any],
    stages: Sequence[Any],
    stage_start: Callable[[Any], int | None],
    stage_href: Callable[[int, int], str],
) -> dict[str, Any]:
    """The page's figure: slots on top, then one lane set of jobs, then one of stage attempts."""
    t0, end = t.start_ms, t.end_ms
    timed = [j for j in jobs if j.submission_time_ms is not None]
    job_bars = Bars.of(
        "job",
        [
            ((j.submission_time_ms - t0) / 1000, ((j.completion_time_ms or end) - t0) / 1000)
            for j in timed
        ],
        [("", f"job {j.job_id}", j.description or j.name, j.status, j.num_tasks) for j in timed],
    )
    # Skipped or never submitted stage attempts have no span to draw.
    started = [(s, b) for s in stages if (b := stage_start(s)) is not None]
    stage_bars = Bars.of(
        "stage",
        [((b - t0) / 1000, ((s.completion_time_ms or end) - t0) / 1000) for s, b in started],
        [
            (
                stage_href(s.stage_id, s.attempt_id),
                f"stage {s.stage_id}.{s.attempt_id}" if s.attempt_id else f"stage {s.stage_id}",
                s.name,
                s.status,
                s.num_tasks,
            )
            for s, _b in started
        ],
    )
    job_traces, job_lanes = job_bars.traces("y2")
    stage_traces, stage_lanes = stage_bars.traces("y3")
    xs, alloc, busy, was_binned = _curve(t)
    jobs_px, stages_px = max(1, job_lanes) * LANE_PX + 30, max(1, stage_lanes) * LANE_PX + 30
    plot_px = SLOTS_PX + jobs_px + stages_px
    top = 1 - SLOTS_PX / plot_px
    mid = top - jobs_px / plot_px
    step = {"type": "scatter", "mode": "lines", "x": xs, "line": {"shape": "hv"}}
    data: list[dict[str, Any]] = [
        {
            **step,
            "name": "allocated slots",
            "y": alloc,
            "line": {"shape": "hv", "color": COLORS["allocated"], "width": 2},
            "hovertemplate": "+%{x:.1f} s: %{y:.2f} slots allocated<extra></extra>",
        },
        {
            **step,
            "name": "busy slots" + (" (bin means)" if was_binned else ""),
            "y": busy,
            "fill": "tozeroy",
            "line": {"shape": "hv", "color": COLORS["busy"], "width": 1},
            "hovertemplate": "+%{x:.1f} s: %{y:.2f} slots busy<extra></extra>",
        },
        *job_traces,
        *stage_traces,
    ]
    lane_axis = {"autorange": "reversed", "showticklabels": False, "zeroline": False}
    layout = {
        "margin": {"l": 60, "r": 20, "t": 30, "b": 50},
        "height": plot_px + 80,
        "barmode": "overlay",
        "hovermode": "closest",
        "xaxis": {
            "title": {"text": "seconds after the application's start"},
            "range": [0, max(t.duration_ms / 1000, 0.001)],
            "anchor": "y3",
            "gridcolor": "#eceff1",
        },
        "yaxis": {
            "domain": [top, 1],
            "title": {"text": "task slots"},
            "rangemode": "tozero",
            "gridcolor": "#eceff1",
        },
        "yaxis2": {"domain": [mid + 0.01, top - 0.02], "title": {"text": "jobs"}, **lane_axis},
        "yaxis3": {"domain": [0, mid - 0.01], "title": {"text": "stages"}, **lane_axis},
        "plot_bgcolor": "#fff",
        "paper_bgcolor": "#fff",
    }
    return {"id": "timeline", "data": data, "layout": layout, "binned": was_binned}
