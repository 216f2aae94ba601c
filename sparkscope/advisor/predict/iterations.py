"""Iterations a run went through, from its jobs: known once the run finished, so a fair measure
of what it had to do (like its input size), never a measure of how long it took.

An iterative application submits the same group of jobs once per round, and names its rounds in
the job descriptions (``pagerank iteration 3/10``, ``epoch 7``): jobs whose descriptions differ
only in their numbers belong to one template, the distinct numbers seen in a template are its
rounds, and the template with the most rounds gives the count (0 when no template has two).

Repetition without numbered descriptions is left to the run's job and stage counts, which are
features of their own: the repeated job shapes of adaptive query execution (one job per shuffle
stage) would otherwise count as rounds and change with a setting.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

_NUMBER = re.compile(r"\d+")


def iterations(jobs: Iterable[Mapping[str, Any]]) -> int:
    """The rounds of the run's most repeated numbered job description (0: none repeats).

    ``jobs``: mappings with a ``description`` (other keys are ignored).
    """
    rounds: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for job in jobs:
        description = str(job.get("description") or "")
        numbers = tuple(_NUMBER.findall(description))
        if numbers:
            rounds[_NUMBER.sub("#", description)].add(numbers)
    most = max((len(r) for r in rounds.values()), default=0)
    return most if most >= 2 else 0
