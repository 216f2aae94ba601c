"""`sparkscope ingest --spark`: the event logs of a folder read by a Spark job, one task per log,
the results loaded here through the same loader, pipeline and watermark as a fetch.

The run is a fetch of an event-log source (:func:`fetcher.job.run_server`) whose reading is done
on the cluster: the driver scans and plans as a fetch does (only new and changed logs), then
submits the planned logs in batches of ``batch`` (one Spark job per batch, one task per log,
:func:`fetcher.eventlog.remote.read_remote` on the executors) and loads each batch's bundles in
plan order, each application in its own transaction, while the next batch runs. At most two
batches of results are held at once, so the driver's memory is bounded whatever the folder holds.
The code goes to the executors as a zip of the ``fetcher``, ``sparkscope`` and ``heuristics``
packages (``SparkContext.addPyFile``); their third-party dependencies must be importable there.
"""

from __future__ import annotations

import logging
import re
import tempfile
import zipfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session, sessionmaker

from fetcher.eventlog.remote import read_remote, settings_of, unpack
from fetcher.eventlog.source import EventLogSource
from fetcher.job import Progress, run_server
from fetcher.options import FetchOptions, ServerResult
from fetcher.parse.app import AppBundle
from fetcher.parse.entry import AppEntry
from fetcher.shs.client import ShsBadResponse, ShsUnreachable
from sparkscope.config.loader import FetcherConfig, ServerConfig
from sparkscope.pipeline.steps import Pipeline

if TYPE_CHECKING:
    from pyspark import SparkContext

log = logging.getLogger("sparkscope.fetch")

PACKAGES = ("fetcher", "sparkscope", "heuristics")


def code_zip(folder: Path) -> Path:
    """A zip of the project's packages (Python files only) for ``addPyFile``."""
    import fetcher

    root = Path(fetcher.__file__).resolve().parent.parent
    out = folder / "sparkscope-code.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for pkg in PACKAGES:
            for path in sorted((root / pkg).rglob("*.py")):
                zf.write(path, path.relative_to(root).as_posix())
    return out


class SparkEventLogSource(EventLogSource):
    """An event-log source whose logs are read by Spark tasks, a batch at a time."""

    def __init__(
        self, server: ServerConfig, fetcher_config: FetcherConfig, sc: SparkContext, batch: int
    ) -> None:
        super().__init__(server, fetcher_config)
        self.sc = sc
        self.batch = max(1, batch)
        self._results: Iterator[tuple[str, bytes]] | None = None
        self._order: list[str] = []
        self.job_error: str | None = None

    def plan(self, *args: Any, **kwargs: Any) -> list[AppEntry]:
        """As a fetch plans; the planned logs are then read on the cluster in this order."""
        todo = super().plan(*args, **kwargs)
        self._order = [self._logs[e.key].path for e in todo]
        self._results = self._batches()
        return todo

    def _run(self, paths: list[str]) -> list[tuple[str, bytes]]:
        settings = settings_of(self.fetcher_config)
        tasks = [(self.location, p, settings) for p in paths]
        return self.sc.parallelize(tasks, len(tasks)).map(read_remote).collect()

    def _batches(self) -> Iterator[tuple[str, bytes]]:
        chunks = [self._order[i : i + self.batch] for i in range(0, len(self._order), self.batch)]
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="spark-batch") as pool:
            ahead: Future[list[tuple[str, bytes]]] | None = None
            for k, chunk in enumerate(chunks):
                try:
                    current = ahead.result() if ahead is not None else self._run(chunk)
                except Exception as exc:  # the job itself failed (cluster, not one log)
                    self.job_error = f"the Spark job failed: {type(exc).__name__}: {exc}"[:2000]
                    log.debug("spark job failed", exc_info=exc)
                    return
                ahead = pool.submit(self._run, chunks[k + 1]) if k + 1 < len(chunks) else None
                log.info("spark batch %d of %d: %d logs read", k + 1, len(chunks), len(chunk))
                yield from current

    def fetch(
        self,
        _client: object,
        entry: AppEntry,
        fetcher_config: FetcherConfig,
        redaction: re.Pattern[str],
    ) -> AppBundle:
        """The next result of the Spark job (the job's one worker asks in plan order)."""
        assert self._results is not None
        item = next(self._results, None)
        if item is None:  # a failed job ends the run as an unreachable server would
            raise ShsUnreachable(self.location, self.job_error or "the Spark job ended early")
        path, blob = item
        src = self._logs[entry.key]
        if path != src.path:
            raise RuntimeError(f"spark results out of order: {path} for {src.path}")
        kind, value = unpack(blob)
        with self._lock:
            self.requests += 1
        if kind != "ok":
            raise ShsBadResponse(path, str(value))
        assert not isinstance(value, str)
        with self._lock:
            self.bytes += value.bytes_read
        return value


def ingest_spark(
    factory: sessionmaker[Session],
    server: ServerConfig,
    fetcher_config: FetcherConfig,
    opts: FetchOptions,
    sc: SparkContext,
    pipeline: Pipeline | None = None,
    batch: int = 64,
    progress: Progress | None = None,
) -> ServerResult:
    """Ingest the new and changed logs of an event-log source with Spark (see the module)."""
    with tempfile.TemporaryDirectory(prefix="sparkscope-ingest-") as tmp:
        sc.addPyFile(str(code_zip(Path(tmp))))
        source = SparkEventLogSource(server, fetcher_config, sc, batch)
        one = FetchOptions(**{**vars(opts), "threads": 1})  # results arrive in plan order
        return run_server(factory, server, fetcher_config, one, pipeline, progress, logs=source)
