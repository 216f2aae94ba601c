"""A crawl's threads kept on one CPU.

The threads of a crawl take turns on the interpreter's lock: one runs Python at a time, and each
hands the lock over at every socket and database call. When they are spread over several CPUs,
every hand-over wakes a thread on another CPU, which on a virtual machine costs more than much
of the work handed over. Kept on the CPU the crawl starts on, the same crawl spends less CPU time
and no more wall time (docs/dev/benchmarks.md): the interpreter never ran two of its threads'
Python at once, and the History Server, the database and other processes keep the other CPUs.

Linux only (``os.sched_setaffinity``); elsewhere, with one CPU allowed, or when the system
refuses, the crawl runs as it is. The calling thread's CPUs are set, so the threads it starts
during the crawl (the worker pool) are kept there too; its own CPUs are put back afterwards.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger("sparkscope.fetch")


def current_cpu() -> int | None:
    """The CPU the calling thread runs on (Linux's ``/proc/thread-self/stat``), or None."""
    try:
        with open("/proc/thread-self/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # the fields after the command (in parentheses, which may hold spaces); "processor" is the
    # 39th field of the line, the 37th after the command
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[36])
    except (IndexError, ValueError):
        return None


def _keep_on_one() -> tuple[int, set[int]] | None:
    """Set the calling thread on the CPU it runs on (else the lowest it may use); (that CPU, the
    CPUs it had), or None when left as it was."""
    get = getattr(os, "sched_getaffinity", None)
    put = getattr(os, "sched_setaffinity", None)
    if get is None or put is None:
        return None
    try:
        before = set(get(0))
        if len(before) < 2:
            return None
        now = current_cpu()
        cpu = now if now is not None and now in before else min(before)
        put(0, {cpu})
    except OSError as exc:
        log.debug("could not keep the crawl on one CPU: %s", exc)
        return None
    return cpu, before


@contextmanager
def one_cpu(enabled: bool = True) -> Iterator[int | None]:
    """Keep the calling thread, and the threads it starts meanwhile, on one of its allowed CPUs
    (the one it runs on) for the duration; yields that CPU, or None when left as it was."""
    kept = _keep_on_one() if enabled else None
    try:
        yield None if kept is None else kept[0]
    finally:
        if kept is not None:
            try:
                os.sched_setaffinity(0, kept[1])
            except OSError as exc:  # the calling thread stays on one CPU; nothing depends on it
                log.debug("could not give the crawl its CPUs back: %s", exc)
