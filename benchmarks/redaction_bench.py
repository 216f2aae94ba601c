"""Redaction benchmark: our CPU per fetched application for masking secrets, and the worst case of
every secret pattern and of the config regex guard on hostile text.

1. The 21 applications recorded from a real Spark 4.0.1 History Server (demo/spark-events) are
   parsed once; then the property redaction (``redact`` on every Spark, system and runtime
   property) and the free-text redaction of the parsed rows (``AppBundle.redact``: names,
   descriptions, failure reasons, error messages, in rows and raw JSON) are timed in CPU time,
   best of ``--reps``, per application.
2. Each pattern of sparkscope.redaction runs on 100,000 characters built from the characters it
   hinges on; the slowest seed is printed per pattern.
3. The worst patterns sparkscope.saferegex admits run as key patterns on a 3,000-character name.

    python -m benchmarks.redaction_bench [--reps 15]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from fetcher.parse.app import AppBundle, parse_environment, parse_executors, parse_jobs
from fetcher.parse.stages import parse_stage_failed_tasks, parse_stages, parse_task_list
from sparkscope.advisor.predict.features import recurring_key
from sparkscope.config.settings import DEFAULT_REDACTION_REGEX
from sparkscope.redaction import PATTERNS, redact

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "demo" / "spark-events"
HOSTILE_SEEDS = (
    *("a", "a=", "a:", "-a ", "<a>", "a://a:", "eyJ", "-----BEGIN PRIVATE KEY-----", '"a":"'),
    *("'a':'", "Authorization: ", "bearer ", 'a="', "jdbc:oracle:thin:a/", "password=a "),
)


def _bodies() -> dict[str, dict[str, Any]]:
    index = json.loads((RECORDING / "index.json").read_text())["requests"]
    out: dict[str, dict[str, Any]] = {}
    for key, rel in index.items():
        parts = key.split("/")
        if parts[0] == "applications" and len(parts) > 2:
            out.setdefault(parts[1], {})[key] = json.loads((RECORDING / rel).read_text())
    return out


def _parsed(pattern: re.Pattern[str]) -> tuple[list[list[dict[str, Any]]], list[AppBundle]]:
    envs, bundles = [], []
    for requests in _bodies().values():
        bundle = AppBundle(entry=None)  # type: ignore[arg-type]  # only the rows are redacted
        for key, body in requests.items():
            path = key.partition("?")[0]
            if path.endswith("/environment"):
                envs.append(parse_environment(body, pattern))
            elif path.endswith("/allexecutors"):
                bundle.executors = parse_executors(body)
            elif path.endswith("/jobs"):
                bundle.jobs = parse_jobs(body)
            elif path.endswith("/stages"):
                bundle.stages, _ = parse_stages(body)
            elif path.endswith("/taskList"):
                bundle.tasks += parse_task_list(0, 0, body, "slowest")
            elif "taskStatus=FAILED" in key:
                bundle.tasks += parse_stage_failed_tasks(0, 0, body)
        bundles.append(bundle)
    return envs, bundles


def _best_cpu_ms(run: Any, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args(argv)
    pattern = re.compile(DEFAULT_REDACTION_REGEX)
    envs, bundles = _parsed(pattern)
    n = len(bundles)
    props = sum(len(rows) for rows in envs) / n

    def properties() -> None:
        for rows in envs:
            for row in rows:
                redact(row["name"], row["value"], pattern)

    def texts() -> None:
        for bundle in bundles:
            bundle.redact(pattern)

    calibration = _best_cpu_ms(lambda: sum(range(1_000_000)), args.reps)
    print(f"calibration: sum(range(10**6)) {calibration:.1f} ms of CPU")
    print(
        f"per application ({n} recorded, {props:.0f} properties each): properties "
        f"{_best_cpu_ms(properties, args.reps) / n:.3f} ms, free texts "
        f"{_best_cpu_ms(texts, args.reps) / n:.3f} ms of CPU"
    )
    for name, compiled in sorted(PATTERNS.items()):
        worst, seed_of = 0.0, ""
        for seed in HOSTILE_SEEDS:
            text = (seed * (100_000 // len(seed) + 1))[:100_000]
            start = time.process_time()
            compiled.sub("", text)
            took = time.process_time() - start
            if took > worst:
                worst, seed_of = took, seed
        print(
            f"pattern {name:12s} worst on 100,000 hostile characters: {worst * 1000:7.1f} ms ({seed_of!r})"
        )
    for key_pattern, char in (
        (r"\d+\d+x", "1"),
        (".*a.*b", "a"),
        (r"\s*\s*x", " "),
        (r"\d+x", "1"),
    ):
        start = time.process_time()
        recurring_key(char * 3000, [key_pattern])
        print(
            f"key pattern {key_pattern!r:10} on a 3,000-character name: "
            f"{(time.process_time() - start) * 1000:.1f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
