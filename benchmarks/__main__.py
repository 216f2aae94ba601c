"""Run every benchmark with its defaults and print the figures: `python -m benchmarks` (or `make bench`).

Each one can be run alone with its own options:
  python -m benchmarks.fetch_bench --help     fetcher: apps/s, requests/app, bytes, peak RSS, ratio to a bare crawl
  python -m benchmarks.rescore_bench --help   heuristics: re-scoring apps/s over 10,000 stored applications
  python -m benchmarks.web_bench --help       web: p50/p95 latency of every page on a 100,000-application fleet
"""

from __future__ import annotations

import sys

from benchmarks import fetch_bench, rescore_bench, web_bench


def main() -> int:
    """Run the three benchmarks in turn."""
    for name, run in (
        ("fetcher", fetch_bench.main),
        ("heuristics re-scoring", rescore_bench.main),
        ("web", web_bench.main),
    ):
        print(f"== {name} ==", flush=True)
        code = run([])
        if code:
            return int(code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
