"""Iterations a run went through, from its jobs: known once the run finished, so a fair measure
of what it had to do (like its input size), never a measure of how long it took.

An iterative application submits the same group of jobs once per round, and names its rounds in
the job descriptions (``pagerank iteration 3/10``, ``epoch 7``): jobs whose descriptions differ
only in their numbers belong to one template, the distinct numbers seen in a template are its
rounds, and the template with the most rounds gives the count (0 when no template has two).

Repetition without numbered descriptions is left to the run's job and stage counts, which are
features of their own: the repeated job shapes of adaptive query execution (one job per shuffle
stage) would otherwise count as rounds and change with a setting.

The same jobs' timeline also says what one round took (``round_ms``): a time-like measure of the
run, which only a finished *training* run may contribute to a prediction (see
:mod:`sparkscope.advisor.predict.rounds_prior`).
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

_NUMBER = re.compile(r"\d+")

#: Jobs of one template, by their rounds (the numbers of the description).
_Rounds = dict[tuple[str, ...], list[Mapping[str, Any]]]


def _loop(jobs: Iterable[Mapping[str, Any]]) -> _Rounds:
    """The jobs of the most repeated numbered template, by round (empty: none repeats)."""
    templates: dict[str, _Rounds] = defaultdict(lambda: defaultdict(list))
    for job in jobs:
        description = str(job.get("description") or "")
        numbers = tuple(_NUMBER.findall(description))
        if numbers:
            templates[_NUMBER.sub("#", description)][numbers].append(job)
    best: _Rounds = {}
    for rounds in templates.values():  # the first of the most repeated, as ``iterations``
        if len(rounds) > len(best):
            best = rounds
    return best if len(best) >= 2 else {}


def iterations(jobs: Iterable[Mapping[str, Any]]) -> int:
    """The rounds of the run's most repeated numbered job description (0: none repeats).

    ``jobs``: mappings with a ``description`` (other keys are ignored).
    """
    return len(_loop(jobs))


def round_ms(jobs: Iterable[Mapping[str, Any]]) -> float:
    """The wall time of one round of the run's loop (0 when it has none, or a round's jobs have
    no times): the median over its rounds of the time from the round's first job submitted to
    the next round's (the last round: to its last job completed). The median leaves out a first
    round that also warmed a cache up, a cost paid once however many rounds follow.

    ``jobs``: mappings with ``description``, ``submitted`` and ``completed`` (epoch ms)."""
    starts: list[tuple[int, int]] = []  # (first submission, last completion) per round
    for members in _loop(jobs).values():
        times: list[tuple[int, int]] = []
        for job in members:
            submitted, completed = job.get("submitted"), job.get("completed")
            if submitted is None or completed is None:
                return 0.0
            times.append((int(submitted), int(completed)))
        starts.append((min(a for a, _b in times), max(b for _a, b in times)))
    if not starts:
        return 0.0
    starts.sort()
    spans = [b[0] - a[0] for a, b in zip(starts, starts[1:], strict=False)]
    spans.append(starts[-1][1] - starts[-1][0])
    return float(max(statistics.median(spans), 0.0))
