"""The cyclic garbage collector during a crawl: its young passes made rare, then put back."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: The cyclic collector's first threshold while a server is fetched (the interpreter's is 700
#: allocations). Decoding one application's bodies makes some hundred thousand dicts and lists,
#: almost none of them in a reference cycle, so at 700 the collector runs a young pass every few
#: hundred of them and a full pass over every live object a few times per application; at this
#: threshold the passes are about 300 times rarer, and what a cycle holds waits at most that
#: many allocations longer (a crawl of 420 applications frees about a thousand objects from
#: cycles in all). A young pass examines what is alive of the objects made since the last one,
#: the fetched applications waiting to be loaded among them, so rarer passes cost less in all:
#: at 50,000 they took about 0.3 ms of CPU per application, at this threshold about 0.1 ms
#: (docs/dev/benchmarks.md). The older generations keep their multipliers.
CRAWL_GC_THRESHOLD = 200_000


@contextmanager
def collector_for_a_crawl() -> Iterator[None]:
    """Raise the cyclic collector's first threshold to :data:`CRAWL_GC_THRESHOLD` for the
    duration (never lower it), then put the thresholds back as they were."""
    before = gc.get_threshold()
    if before[0]:  # 0: the collector's automatic passes are off, leave them so
        gc.set_threshold(max(before[0], CRAWL_GC_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
