"""Run every benchmark with its defaults and print the figures: `python -m benchmarks` (or `make bench`).

Each one can be run alone with its own options:
  python -m benchmarks.fetch_bench --help     fetcher: CPU per application by phase (SQLite, PostgreSQL), ratio to a bare crawl, requests/app
  python -m benchmarks.fetch_lab --help       fetcher offline: one thread, no HTTP, CPU (or instructions) per application by phase
  python -m benchmarks.rescore_bench --help   heuristics: re-scoring apps/s over 10,000 stored applications
  python -m benchmarks.web_bench --help       web: p50/p95 latency of every page on a 100,000-application fleet
  python -m benchmarks.predict_bench --help   predictions: fetch-time cost per new run, backtest over a fleet
  python -m benchmarks.whatif_bench --help    what-if: accuracy on the scaling corpus, sizing, curve latency
  python -m benchmarks.eventlog_bench --help  event logs: equivalence with a real SHS, speed ratio, CPU/app, memory
  python -m benchmarks.redaction_bench --help redaction: CPU per application, worst case of each pattern
  python -m benchmarks.limits_bench --help    what-if limits: the worst allowed requests and the refused probes
  python -m benchmarks.prune_bench --help     retention: prune time per 100,000 applications (PostgreSQL)
  python -m benchmarks.model_eval --help      prediction forms compared per regime (docs/dev/models.md;
                                              not run here: tens of minutes)
  python -m benchmarks.heldout_spark --help   the duration model on new real Spark applications, made here
                                              with spark-submit (not run here: about ten minutes)
  python -m benchmarks.heldout_floor --help   the held-out draws' error beside a line fitted on every run
                                              (not run here: needs heldout_spark's logs)
"""

from __future__ import annotations

import sys

from benchmarks import (
    eventlog_bench,
    fetch_bench,
    fetch_lab,
    limits_bench,
    predict_bench,
    prune_bench,
    redaction_bench,
    rescore_bench,
    web_bench,
    whatif_bench,
)


def main() -> int:
    """Run the benchmarks in turn."""
    for name, run in (
        ("fetcher", fetch_bench.main),
        ("fetcher, offline", fetch_lab.main),
        ("heuristics re-scoring", rescore_bench.main),
        ("web", web_bench.main),
        ("predictions", predict_bench.main),
        ("what-if", whatif_bench.main),
        ("event logs", eventlog_bench.main),
        ("redaction", redaction_bench.main),
        ("what-if limits", limits_bench.main),
        ("retention", prune_bench.main),
    ):
        print(f"== {name} ==", flush=True)
        code = run([])
        if code:
            return int(code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
