"""A History Server crawl keeps its threads on one CPU (``fetcher.one_cpu``), the CPU it started
on, and gives the calling thread its CPUs back afterwards; an event-log read, a crawl with the
setting off, or a process allowed one CPU are left as they are."""

from __future__ import annotations

import dataclasses
import os
import threading

import pytest
from sqlalchemy.orm import Session, sessionmaker

from fetcher.affinity import current_cpu, one_cpu
from fetcher.job import run_server
from fetcher.options import FetchOptions
from sparkscope.config.loader import FetcherConfig, ServerConfig
from tests.fetcher import recorded, stub_shs
from tests.fetcher.conftest import FETCHER_CONFIG, SERVER
from tests.fetcher.eventlog.conftest import SAMPLE
from tests.fetcher.recorded import BILLING

linux = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs Linux and two CPUs allowed",
)


def _cpus() -> set[int]:
    return set(os.sched_getaffinity(0))


@linux
def test_the_calling_thread_is_on_a_cpu_of_its_own() -> None:
    assert current_cpu() in _cpus()


@linux
def test_threads_started_inside_stay_on_the_one_cpu_and_the_cpus_come_back() -> None:
    before = _cpus()
    seen: list[set[int]] = []
    with one_cpu() as cpu:
        inside = _cpus()
        worker = threading.Thread(target=lambda: seen.append(_cpus()))
        worker.start()
        worker.join()
    assert cpu in before
    assert inside == {cpu} and seen == [{cpu}]
    assert _cpus() == before


@linux
def test_left_as_it_is_when_off_or_when_one_cpu_is_allowed() -> None:
    before = _cpus()
    with one_cpu(enabled=False) as cpu:
        assert cpu is None and _cpus() == before
    alone = {min(before)}
    os.sched_setaffinity(0, alone)
    try:
        with one_cpu() as cpu:
            assert cpu is None and _cpus() == alone
        assert _cpus() == alone
    finally:
        os.sched_setaffinity(0, before)


@linux
@pytest.mark.parametrize("on", [True, False])
def test_an_shs_crawl_runs_on_one_cpu_when_the_setting_is_on(
    rsps: stub_shs.StubShs, factory: sessionmaker[Session], on: bool
) -> None:
    recorded.register_listing(rsps, [BILLING])
    recorded.register_app(rsps, BILLING)
    before = _cpus()
    during: list[set[int]] = []
    cfg = dataclasses.replace(FETCHER_CONFIG, one_cpu=on)
    result = run_server(
        factory, SERVER, cfg, FetchOptions(), progress=lambda *_: during.append(_cpus())
    )
    assert result.loaded == 1 and len(during) == 1
    assert (len(during[0]) == 1 and during[0] <= before) if on else during[0] == before
    assert _cpus() == before


@linux
def test_an_event_log_read_keeps_every_cpu(factory: sessionmaker[Session]) -> None:
    before = _cpus()
    during: list[set[int]] = []
    server = ServerConfig(name="logs", url=str(SAMPLE), event_logs=str(SAMPLE))
    result = run_server(
        factory,
        server,
        FetcherConfig(threads=2),
        FetchOptions(),
        progress=lambda *_: during.append(_cpus()),
    )
    assert result.loaded >= 1 and during and all(cpus == before for cpus in during)
