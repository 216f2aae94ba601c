"""CPU time of a fetch split by phase, from the threads that spend it.

:func:`instrument` wraps the fetcher's entry points of each phase (in the process that fetches,
for the benchmark only) with a per-thread CPU clock (``time.thread_time``), so a worker thread's
HTTP time and the main thread's load time are each counted where they are spent:

- ``http``: a request and reading its body (``ShsClient.get_json`` minus the decode);
- ``decode``: the JSON decode of the bodies (``fetcher.shs.safejson``);
- ``parse``: the request plan's own work, bodies into rows (``fetch_app`` minus its requests);
- ``load``: the loader's statements (``fetcher.loader.load_applications``);
- ``pipeline``: the per-application steps (``Pipeline.prepare`` and ``Pipeline.after_load``);
- ``commit``: the rest of an application's transaction (session, watermark, commit);

What the process spent beyond these (the listing, the thread pool, the interpreter) is the
difference to its total CPU time (``resource.getrusage``), shown as ``other``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

PHASES = ("http", "decode", "parse", "load", "pipeline", "commit")


class PhaseClock:
    """CPU seconds per phase, summed over threads; a phase nested in another is taken out of it."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self._lock = threading.Lock()
        self._local = threading.local()

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` with its CPU time counted under ``phase`` (less that of phases inside it)."""

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack = getattr(self._local, "stack", None)
            if stack is None:
                stack = self._local.stack = []
            stack.append(0.0)  # CPU time of the phases nested in this call
            started = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.thread_time() - started
                inner = stack.pop()
                if stack:
                    stack[-1] += spent
                with self._lock:
                    self.seconds[phase] += spent - inner

        return timed


def instrument() -> PhaseClock:
    """Wrap the fetcher's phase entry points in this process; returns the clock they feed."""
    from fetcher import job, loader
    from fetcher.shs import client, request_plan, safejson
    from sparkscope.pipeline.steps import Pipeline

    clock = PhaseClock()
    safejson.loads = clock.wrap("decode", safejson.loads)  # type: ignore[method-assign]
    safejson.loads_marking = clock.wrap("decode", safejson.loads_marking)  # type: ignore[method-assign]
    client.ShsClient.get_json = clock.wrap("http", client.ShsClient.get_json)  # type: ignore[method-assign]
    job.fetch_app = clock.wrap("parse", request_plan.fetch_app)  # type: ignore[attr-defined]
    loader.load_applications = clock.wrap("load", loader.load_applications)  # type: ignore[method-assign]
    Pipeline.after_load = clock.wrap("pipeline", Pipeline.after_load)  # type: ignore[method-assign]
    if hasattr(Pipeline, "prepare"):  # the in-memory steps, where they run apart
        Pipeline.prepare = clock.wrap("pipeline", Pipeline.prepare)  # type: ignore[method-assign]
    job._load = clock.wrap("commit", job._load)  # type: ignore[attr-defined]
    return clock
