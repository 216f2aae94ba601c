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


@contextmanager
def one_cpu(enabled: bool = True) -> Iterator[int | None]:
    """Keep the calling thread, and the threads it starts meanwhile, on one of its allowed CPUs
    (the one it runs on) for the duration; yields that CPU, or None when left as it was."""
    get = getattr(os, "sched_getaffinity", None)
    put = getattr(os, "sched_setaffinity", None)
    if not enabled or get is None or put is None:
        yield None
        return
    try:
        before = get(0)
    except OSError:
        yield None
        return
    cpu = current_cpu()
    if cpu not in before:
        cpu = min(before) if before else None
    if cpu is None or len(before) < 2:
        yield None
        return
    try:
        put(0, {cpu})
    except OSError as exc:
        log.debug("could not keep the crawl on CPU %d: %s", cpu, exc)
        yield None
        return
    try:
        yield cpu
    finally:
        try:
            put(0, before)
        except OSError as exc:  # the calling thread stays on one CPU; nothing else depends on it
            log.debug("could not give the crawl its CPUs back: %s", exc)
