"""`ingest --spark`: the same parser as a real PySpark job in local mode (local[2]), one task per
log, loaded through the same loader: it stores what a fetch of the same folder stores, fails a bad
log as a fetch does, and reads nothing again on a second run."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fetcher.ingest import ingest_spark
from fetcher.job import run_server
from fetcher.options import FetchOptions
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.config.loader import BUNDLED_CONFIG_DIR, FetcherConfig, ServerConfig
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.pipeline.steps import Pipeline
from tests.conftest import create_pg_database, drop_pg_database
from tests.fetcher.eventlog.conftest import LAYOUTS, SAMPLE
from tests.support.stores import differences, extras_count, stored

pytestmark = [
    pytest.mark.spark,
    # PySpark's collect() leaves the sockets of its result server to the garbage collector
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(scope="module")
def sc() -> Iterator[Any]:
    from tests.support.shs import have_java_and_pyspark

    if not have_java_and_pyspark():
        pytest.skip("needs Java 17 and pyspark")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("sparkscope-ingest-test")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    yield spark.sparkContext
    spark.stop()


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("logs")
    for src in [*SAMPLE.iterdir(), LAYOUTS / "local-1796114361767.lz4"]:
        dst = out / src.name
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy2(src, dst)
    plain = (LAYOUTS / "local-1796114417500").read_bytes()
    (out / "local-1234567890123").write_bytes(plain[:-30])  # completed, cut in its last line
    return out


def test_ingest_stores_what_a_fetch_stores(
    sc: Any, logs: Path, pg_server_url: str, pg_template: str
) -> None:
    registry = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml"))
    server = ServerConfig(name="logs", url=str(logs), event_logs=str(logs))
    fetcher_config = FetcherConfig(threads=2)
    urls = [create_pg_database(pg_server_url, template=pg_template) for _ in range(2)]
    try:
        engines = [make_engine(u) for u in urls]
        factories = [make_sessionmaker(e) for e in engines]
        pipes = [Pipeline(registry=registry), Pipeline(registry=registry)]
        fetched = run_server(factories[0], server, fetcher_config, FetchOptions(), pipes[0])
        pipes[0].complete(factories[0])
        ingested = ingest_spark(
            factories[1], server, fetcher_config, FetchOptions(), sc, pipes[1], batch=2
        )
        pipes[1].complete(factories[1])
        assert (ingested.loaded, fetched.loaded) == (6, 6)
        assert (
            [a for a, _ in ingested.failed]
            == [a for a, _ in fetched.failed]
            == ["local-1234567890123"]
        )
        assert "truncated event log" in ingested.failed[0][1]
        assert ingested.requests == 7  # every log read once, on the executors
        assert differences(stored(urls[1]), stored(urls[0])) == []
        assert extras_count(urls[1]) == extras_count(urls[0])
        again = ingest_spark(
            factories[1], server, fetcher_config, FetchOptions(), sc, pipes[1], batch=2
        )
        assert (again.loaded, again.skipped, again.requests) == (0, 6, 1)  # the bad log retried
        for e in engines:
            e.dispose()
    finally:
        for u in urls:
            drop_pg_database(pg_server_url, u)
