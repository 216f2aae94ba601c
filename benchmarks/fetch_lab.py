"""The fetch's own work per application, offline: recorded History Server answers decoded,
parsed, prepared (scored, encoded) and loaded into a fresh database, on one thread, with no HTTP,
no thread pool and no other process. Prints CPU milliseconds per application by phase.

`fetch_bench` measures the real fetch, whose figures move with the machine's load by more than
most changes do. This loop runs the same functions on the same bodies in the same order every
time, so under callgrind its instruction count is the same from run to run whatever else the
machine does (to about 0.1%), and a change's effect on the per-application work can be read on
a busy machine:

    python -m benchmarks.fetch_lab [--corpus demo/spark-events] [--repeat 10] [--batch 8]
        [--database-url URL] [--instructions]

``--instructions`` runs the loop under valgrind's callgrind (about fifty times slower: use
``--repeat 2``) and prints the instructions it executed per application, the loop only.

Each application of the corpus is loaded ``--repeat`` times under new ids, ``--batch`` of them
per transaction as the fetch loads them (``fetcher.job``), after one unmeasured batch.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("decode", "parse", "prepare", "load", "after_load", "commit")


class RecordedBodies:
    """Answers the request plan's requests with a corpus's recorded bodies, timing the decode."""

    def __init__(self, corpus: Path, clock: defaultdict[str, float]) -> None:
        index = json.loads((corpus / "index.json").read_text())["requests"]
        self.bodies = {key: (corpus / rel).read_bytes() for key, rel in index.items()}
        self.clock = clock

    def get_json(self, request: Any, mark_hostile: bool = False, unread: Sequence[str] = ()) -> Any:
        """The decoded body the corpus holds for ``request``, as the client decodes it."""
        from fetcher.shs import endpoints, safejson

        body = self.bodies[endpoints.request_key(*request)]
        started = time.thread_time()
        try:
            return safejson.loads_unread(body, unread)
        finally:
            self.clock["decode"] += time.thread_time() - started


def _callgrind(pid: int, on: bool) -> None:
    subprocess.run(
        ["callgrind_control", "-i", "on" if on else "off", str(pid)],
        capture_output=True,
        check=False,
    )


def run(
    corpus: Path, repeat: int, batch: int, db_url: str | None, callgrind: bool = False
) -> dict[str, float]:
    """Load the corpus ``repeat`` times (into ``db_url``, else a new SQLite file), print CPU ms
    per application by phase and return them."""
    import os

    from fetcher import loader
    from fetcher.collector import collector_for_a_crawl
    from fetcher.parse.entry import parse_listing
    from sparkscope import migrate
    from sparkscope.analysis.heuristics_config import load_heuristics
    from sparkscope.config.loader import BUNDLED_CONFIG_DIR, FetcherConfig
    from sparkscope.db import make_engine, make_sessionmaker
    from sparkscope.pipeline.steps import Pipeline

    clock: defaultdict[str, float] = defaultdict(float)
    source = RecordedBodies(corpus, clock)
    listing = next(k for k in source.bodies if k.startswith("applications?"))
    entries = parse_listing(json.loads(source.bodies[listing]))
    config = FetcherConfig()
    redaction = re.compile(config.redaction_regex)
    pipeline = Pipeline(registry=load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")))
    db_url = db_url or f"sqlite:///{tempfile.mkdtemp(prefix='fetch-lab-')}/lab.db"
    migrate.upgrade(db_url)
    factory = make_sessionmaker(make_engine(db_url))
    with factory() as session, session.begin():
        server_id = loader.ensure_server(session, "lab", "http://lab")
        pipeline.start_run(session)
    todo = [
        (entry, dataclasses.replace(entry, app_id=f"{entry.app_id}-lab{r}"))
        for r in range(repeat)
        for entry in entries
    ]
    warm = [(e, dataclasses.replace(e, app_id=f"{e.app_id}-warm")) for e in entries[:batch]]
    with collector_for_a_crawl():  # the fetch's garbage collector settings
        # once unmeasured: the modules imported on first use, the caches a crawl fills
        _loop(
            warm, batch, source, config, redaction, pipeline, factory, server_id, defaultdict(float)
        )
        if callgrind:
            _callgrind(os.getpid(), True)
        _loop(todo, batch, source, config, redaction, pipeline, factory, server_id, clock)
        if callgrind:
            _callgrind(os.getpid(), False)
    clock["parse"] -= clock["decode"]
    n = len(todo)
    print(f"{n} applications ({len(entries)} recorded, x{repeat}), {batch} per transaction")
    for phase in PHASES:
        print(f"  {phase:<12}{clock[phase] * 1000 / n:7.2f} ms/app")
    print(f"  {'total':<12}{sum(clock[p] for p in PHASES) * 1000 / n:7.2f} ms/app")
    return {phase: clock[phase] * 1000 / n for phase in PHASES}


def _loop(
    todo: list[tuple[Any, Any]],
    batch: int,
    source: RecordedBodies,
    config: Any,
    redaction: re.Pattern[str],
    pipeline: Any,
    factory: Any,
    server_id: int,
    clock: defaultdict[str, float],
) -> None:
    from fetcher import loader
    from fetcher.shs.request_plan import fetch_app

    for start in range(0, len(todo), batch):
        t0 = time.thread_time()
        bundles = []
        for recorded, renamed in todo[start : start + batch]:
            bundle = fetch_app(source, recorded, config, redaction)
            bundle.entry = renamed
            bundles.append(bundle)
        t1 = time.thread_time()
        prepared = [pipeline.prepare(b) for b in bundles]
        t2 = time.thread_time()
        with factory() as session:
            with session.begin():
                pairs = [(b, p.application) for b, p in zip(bundles, prepared, strict=True)]
                stored = loader.load_applications(session, server_id, pairs)
                t3 = time.thread_time()
                pipeline.after_load(
                    session, server_id, list(zip(bundles, stored, prepared, strict=True))
                )
                t4 = time.thread_time()
            t5 = time.thread_time()
        clock["parse"] += t1 - t0  # the decode is taken out below
        clock["prepare"] += t2 - t1
        clock["load"] += t3 - t2
        clock["after_load"] += t4 - t3
        clock["commit"] += t5 - t4


def instructions(argv: list[str]) -> None:
    """Run this benchmark (``argv``, less ``--instructions``) under callgrind, counting only
    its loop; print what it printed and the instructions per application."""
    import sys

    with tempfile.TemporaryDirectory(prefix="fetch-lab-cg-") as tmp:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={tmp}/out",
                sys.executable,
                "-m",
                "benchmarks.fetch_lab",
                *argv,
                "--callgrind",
            ],  # fmt: skip
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
    print(done.stdout, end="")
    collected = re.search(r"Collected : (\d+)", done.stderr)
    apps = re.match(r"(\d+) applications", done.stdout)
    if done.returncode or collected is None or apps is None:
        raise SystemExit(f"callgrind run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    per_app = int(collected.group(1)) / int(apps.group(1))
    print(f"  instructions {per_app / 1e6:7.2f} M/app (callgrind)")


def main(argv: list[str] | None = None) -> int:
    """Parse the options and run the loop."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(ROOT / "demo" / "spark-events"))
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--database-url", default=None)
    ap.add_argument(
        "--instructions", action="store_true", help="count instructions per application"
    )
    ap.add_argument("--callgrind", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.instructions:
        import sys

        instructions([a for a in (sys.argv[1:] if argv is None else argv) if a != "--instructions"])
        return 0
    run(Path(args.corpus), args.repeat, args.batch, args.database_url, args.callgrind)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
