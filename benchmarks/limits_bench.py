"""Bounded work per request: the worst what-if and sizing requests the limits allow, and the
probes they refuse, timed through the web app on stored data, each in a process of its own.

Data: the recorded scaling corpus (demo/scaling-events, 36 real runs) and one synthetic
application of 2,000 stages and 200,000 tasks (as whatif_bench stores it), half of its stages
reading input, replayed into a throwaway SQLite database.

Scenarios (``python -m benchmarks.limits_bench [--stages 2000] [--tasks 200000]``):
  the issue's probes, refused with a 400: input_bytes=10000000000000, executors=100000&cores=1024,
  deadline= with 309 nines; and the worst allowed: the what-if of the big application at up to
  64 executor counts up to its task-slot limit with 10 times its input, at 1 and at its own
  cores; the sizing of a corpus key at up to 64 executor counts x 8 core counts, and of the big
  application at up to 64 executor counts of its own cores, with 10 times their largest input. When the work limit refuses a worst request,
  its largest executor counts that the limit allows are found (bisection) and asked: the worst
  allowed.

Prints per scenario the status, the wall time of the request and the process's peak RSS (and
its growth during the request). Targets: the worst allowed request <= 1 s and <= 200 MB RSS;
a refused one answers at once.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import whatif_bench

NIGHTLY = "nightly_feature_build"
BIG = "app-big"


def _with_input(url: str) -> None:
    """Give the big application an input read by half its stages (the scan stages, which get
    more tasks with more input), and store its what-if input again."""
    from sqlalchemy import create_engine, select, update
    from sqlalchemy.orm import Session

    from sparkscope.models.application import Application, Stage
    from sparkscope.models.whatif import WhatIfInput
    from sparkscope.whatif import inputs as wi
    from sparkscope.whatif.calibration import gather

    engine = create_engine(url)
    with Session(engine) as session, session.begin():
        app = session.scalars(select(Application).where(Application.app_id == BIG)).one()
        session.execute(
            update(Stage)
            .where(Stage.application_id == app.id, Stage.stage_id % 2 == 0)
            .values(input_bytes=64 * 2**20)
        )
        app.input_bytes = 1000 * 64 * 2**20
        session.flush()
        row = session.get(WhatIfInput, app.id)
        assert row is not None
        row.data = wi.encode(gather(session, app))
    engine.dispose()


def _counts(top: int, n: int = 64) -> str:
    """``n`` distinct executor counts from 1 up to ``top``."""
    step = max(1, top // n)
    values = sorted({min(top, 1 + i * step) for i in range(n)} | {top})[-n:]
    return ",".join(str(v) for v in values)


def scenarios(url: str) -> list[tuple[str, str]]:
    """(label, request path) of every scenario, from the stored data's limits."""
    from sqlalchemy import create_engine, func, select
    from sqlalchemy.orm import Session

    from sparkscope.advisor.whatif.limits import INPUT_FACTOR, MIN_SLOTS, SLOT_FACTOR
    from sparkscope.models.application import Application

    engine = create_engine(url)
    with Session(engine) as s:
        top_input = int(
            s.scalar(select(func.max(Application.input_bytes)).where(Application.name == NIGHTLY))
            or 0
        )
        big_input = int(
            s.scalar(select(Application.input_bytes).where(Application.app_id == BIG)) or 0
        )
    engine.dispose()
    big_slots = max(MIN_SLOTS, SLOT_FACTOR * 8 * 4)  # 8 executors x 4 cores
    corpus_slots = MIN_SLOTS  # the corpus ran at most 8 x 2 slots
    cores8 = "1,2,3,4,5,6,7,8"
    return [
        (
            "probe: advise input_bytes=1e13",
            f"/api/advise?name={NIGHTLY}&deadline=1h&input_bytes=10000000000000",
        ),
        (
            "probe: advise executors=100000&cores=1024",
            f"/api/advise?name={NIGHTLY}&deadline=1h&executors=100000&cores=1024",
        ),
        ("probe: advise deadline=9{309}s", f"/api/advise?name={NIGHTLY}&deadline={'9' * 309}s"),
        (
            "probe: whatif executors=100000&cores=1024",
            f"/api/apps/{BIG}/whatif?executors=100000&cores=1024",
        ),
        (
            "worst whatif: 64 sizes x 4 cores, 10x input",
            f"/api/apps/{BIG}/whatif"
            f"?executors={_counts(big_slots // 4)}&input_scale={INPUT_FACTOR}",
        ),
        (
            "worst whatif: 64 sizes x 1 core, 10x input",
            f"/api/apps/{BIG}/whatif"
            f"?executors={_counts(big_slots)}&cores=1&input_scale={INPUT_FACTOR}",
        ),
        (
            "worst advise (corpus): 64 sizes x 8 cores, 10x input",
            f"/api/advise?name={NIGHTLY}"
            f"&deadline=1h&executors={_counts(corpus_slots // 8)}&cores={cores8}"
            f"&input_bytes={INPUT_FACTOR * top_input}",
        ),
        (
            "worst advise (big): 64 sizes x its 4 cores, 10x input",
            "/api/advise?name=big"
            f"&deadline=1h&executors={_counts(big_slots // 4)}&cores=4"
            f"&input_bytes={INPUT_FACTOR * big_input}",
        ),
    ]


def one(url: str, path: str) -> dict[str, Any]:
    """One request in this process, after a cheap one that loads what every request needs."""
    from sparkscope.config.loader import parse_config
    from sparkscope.web.app import create_app

    app = create_app(
        {"TESTING": True, "WHATIF_CACHE_SECONDS": 0, "WHATIF_BUDGET_SECONDS": 600},
        config=parse_config({"database_url": url}, env={}),
    )
    client = app.test_client()
    client.get(f"/api/apps/{BIG}/whatif?executors=1")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    r = client.get(path)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    body = r.get_json() or {}
    return {
        "status": r.status_code,
        "seconds": seconds,
        "peak_mb": peak / 1024,
        "grew_mb": (peak - before) / 1024,
        "message": str(body.get("message", ""))[:400],
        "points": len(body.get("points") or body.get("curve") or [])
        + len(body.get("other_cores") or []),
    }


def _run_one(url: str, path: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.limits_bench", "--one", url, path],
        capture_output=True,
        text=True,
        check=True,
        cwd=whatif_bench.ROOT,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _client(url: str) -> Any:
    from sparkscope.config.loader import parse_config
    from sparkscope.web.app import create_app

    app = create_app(
        {"TESTING": True, "WHATIF_CACHE_SECONDS": 0, "WHATIF_BUDGET_SECONDS": 600},
        config=parse_config({"database_url": url}, env={}),
    )
    return app.test_client()


def _keep(path: str, keep: int) -> str:
    """The request with its ``keep`` largest executor counts only."""

    def cut(m: re.Match[str]) -> str:
        return m.group(1) + ",".join(m.group(2).split(",")[-keep:])

    return re.sub(r"([?&]executors=)([0-9,]+)", cut, path)


def _worst_allowed(client: Any, path: str) -> tuple[str, int | None]:
    """The request as asked if allowed, else with the most of its largest executor counts
    that the work limit allows (None: as asked)."""
    if client.get(path).status_code == 200:
        return path, None
    counts = re.search(r"[?&]executors=([0-9,]+)", path)
    assert counts is not None, path
    lo, hi = 0, len(counts.group(1).split(","))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if client.get(_keep(path, mid)).status_code == 200:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        raise SystemExit(f"not even one size of {path} is allowed")
    return _keep(path, lo), lo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.limits_bench")
    parser.add_argument("--stages", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=200_000)
    parser.add_argument("--one", nargs=2, metavar=("URL", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(*args.one)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'limits.db'}"
        whatif_bench._fetch_corpus(url)
        whatif_bench._store_big_app(url, args.stages, args.tasks)
        _with_input(url)
        print(
            f"worst requests on {whatif_bench.CORPUS.name} + one application of {args.stages}"
            f" stages / {args.tasks} tasks (SQLite), one process each:"
        )
        worst = 0.0
        worst_mb = 0.0
        client = _client(url)
        for label, path in scenarios(url):
            if not label.startswith("probe"):
                path, kept = _worst_allowed(client, path)
                label += f" ({kept} sizes)" if kept else ""
            r = _run_one(url, path)
            what = r["message"][:70] if r["status"] != 200 else f"{r['points']} points"
            print(
                f"  {label:52s} {r['status']}  {r['seconds'] * 1000:7.0f} ms"
                f"  peak RSS {r['peak_mb']:5.0f} MB (+{r['grew_mb']:.0f})  {what}"
            )
            if r["status"] == 200:
                worst, worst_mb = max(worst, r["seconds"]), max(worst_mb, r["peak_mb"])
        print(
            f"worst allowed request: {worst * 1000:.0f} ms (target <= 1000 ms),"
            f" peak RSS {worst_mb:.0f} MB (target <= 200 MB)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
