"""Equivalence harness (tests only): our answers against what a real History Server answered.

A recording is a folder in the fetcher's dump format (``index.json`` mapping each request key --
path plus sorted query -- to a file of the SHS's body). For every recorded request we answer the
same request from the event logs and deep-compare the decoded JSON.

    python -m tests.support.eventlog_compare RECORDING_DIR LOG_DIR [--show N]

Differences are reported per field (the JSON path with list positions and ids folded to ``*``),
with counts and a few examples. Fields whose difference is known and unavoidable are reported
apart (see :data:`KNOWN`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

from fetcher.eventlog.app import ReplayedApp, replay_source
from fetcher.eventlog.listing import listing
from fetcher.eventlog.params import BadRequest, NotFound
from fetcher.eventlog.read.files import LogSource, discover


class FolderLogs:
    """Answers SHS REST requests for every event log under a folder (replayed on first use)."""

    def __init__(self, log_dir: str | os.PathLike[str], max_apps: int = 8) -> None:
        self.log_dir = str(log_dir)
        self.max_apps = max_apps
        self.sources: list[LogSource] = discover(self.log_dir)
        self._by_name: dict[str, LogSource] = {s.name_id: s for s in self.sources}
        self._cache: OrderedDict[str, ReplayedApp] = OrderedDict()
        self._listing_apps: list[ReplayedApp] | None = None
        self._lock = threading.RLock()  # one replay at a time; answers are read-only afterwards
        self.requests = 0
        self.bytes = 0

    # The fetcher's client calls it like this.
    def get_json(
        self,
        request: tuple[str, list[tuple[str, str]]],
        mark_hostile: bool = False,
        unread: tuple[str, ...] = (),
    ) -> Any:
        path, params = request
        self.requests += 1
        data = self.answer(path, params)
        self.bytes += len(json.dumps(data))
        return data

    def answer(self, path: str, params: list[tuple[str, str]]) -> Any:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts == ["version"]:
            return {
                "spark": self._all_apps()[0].status.app.spark_version if self._all_apps() else ""
            }
        if parts[0] != "applications":
            raise NotFound(path)
        if len(parts) == 1:
            return listing(self._all_apps(), params)
        app_id = parts[1]
        attempt = parts[2] if len(parts) > 2 else None
        app = self._app(app_id, attempt)
        if len(parts) == 2:
            return listing([a for a in self._all_apps() if a.app_id == app_id])[0]
        query = "&".join(f"{k}={v}" for k, v in params)
        return app.rest(path + ("?" + query if query else ""))

    def _all_apps(self) -> list[ReplayedApp]:
        with self._lock:
            return self._all_apps_locked()

    def _all_apps_locked(self) -> list[ReplayedApp]:
        if self._listing_apps is None:
            # The listing needs every log once (FsHistoryProvider reads them all too).
            self._listing_apps = [self._load(s) for s in self.sources]
        return self._listing_apps

    def _app(self, app_id: str, attempt: str | None) -> ReplayedApp:
        names = [app_id + "_" + attempt, app_id] if attempt else [app_id]
        for name in names:
            src = self._by_name.get(name)
            if src is not None:
                return self._load(src)
        for a in self._all_apps():
            if a.app_id == app_id and (
                a.attempt_id is None or a.attempt_id == attempt or attempt is None
            ):
                return a
        raise NotFound(f"unknown app: {app_id}")

    def _load(self, src: LogSource) -> ReplayedApp:
        with self._lock:
            return self._load_locked(src)

    def _load_locked(self, src: LogSource) -> ReplayedApp:
        key = str(src.path)
        app = self._cache.get(key)
        if app is None:
            app = replay_source(src)
            self._cache[key] = app
            while len(self._cache) > self.max_apps:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return app


#: Field -> why it cannot match: the value comes from the environment, not from the log.
KNOWN: dict[str, str] = {
    "attempts.*.lastUpdated": "the log file's modification time on the machine that served it "
    "(the corpus files were copied since, so their mtimes differ)",
    "attempts.*.lastUpdatedEpoch": "same as lastUpdated",
}


#: Known only for applications still in progress: the SHS uses its own clock for them.
KNOWN_IN_PROGRESS: dict[str, str] = {
    "totalDuration": "the driver's totalDuration of an unfinished app is 'now - start' at request "
    "time (AppStatusStore.extractAppTime); we use the log's modification time",
    "duration": "a running SQL execution's duration is 'now - submission' at request time",
}


@dataclass
class Difference:
    request: str
    path: str
    ours: Any
    theirs: Any
    in_progress: bool = False

    @property
    def field(self) -> str:
        return re.sub(r"(^|\.)\d+(?=\.|$)", r"\1*", self.path)


@dataclass
class Report:
    requests: int = 0
    failed_requests: list[tuple[str, str]] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)

    def known(self) -> list[Difference]:
        return [d for d in self.differences if _known_key(d) is not None]

    def unknown(self) -> list[Difference]:
        return [d for d in self.differences if _known_key(d) is None]

    def by_field(self, diffs: list[Difference]) -> dict[tuple[str, str], list[Difference]]:
        out: dict[tuple[str, str], list[Difference]] = defaultdict(list)
        for d in diffs:
            out[(_endpoint(d.request), d.field)].append(d)
        return dict(out)

    def render(self, show: int = 3) -> str:
        lines = [
            f"requests compared: {self.requests}",
            f"requests that failed: {len(self.failed_requests)}",
            f"differences: {len(self.unknown())} unexplained, {len(self.known())} known",
        ]
        for req, err in self.failed_requests[: show * 5]:
            lines.append(f"  FAILED {req}: {err}")
        for title, diffs in (("UNEXPLAINED", self.unknown()), ("KNOWN", self.known())):
            groups = self.by_field(diffs)
            if not groups:
                continue
            lines.append(f"{title} differences by field:")
            for (ep, fld), ds in sorted(groups.items(), key=lambda kv: -len(kv[1])):
                reason = known_reason(_known_key(ds[0]) or "")
                lines.append(f"  {ep} :: {fld}  x{len(ds)}" + (f"  -- {reason}" if reason else ""))
                for d in ds[:show]:
                    lines.append(
                        f"      {d.request} @ {d.path}: ours={_short(d.ours)} shs={_short(d.theirs)}"
                    )
        return "\n".join(lines)


def _known_key(d: Difference) -> str | None:
    for k in KNOWN:
        if d.field.endswith(k):
            return k
    if d.in_progress:
        last = d.field.rsplit(".", 1)[-1]
        if last in KNOWN_IN_PROGRESS:
            return "in-progress:" + last
    return None


def known_reason(key: str) -> str:
    if key.startswith("in-progress:"):
        return KNOWN_IN_PROGRESS[key.split(":", 1)[1]]
    return KNOWN.get(key, "")


def _short(v: Any) -> str:
    s = json.dumps(v) if not isinstance(v, str) else repr(v)
    return s if len(s) <= 120 else s[:117] + "..."


def _endpoint(request: str) -> str:
    path = request.split("?", 1)[0]
    path = re.sub(r"^applications/[^/]+", "applications/{app}", path)
    path = re.sub(r"/stages/\d+/\d+", "/stages/{id}/{attempt}", path)
    path = re.sub(r"/jobs/\d+", "/jobs/{id}", path)
    q = (
        "?" + request.split("?", 1)[1].split("&")[0].split("=")[0] + "=..."
        if "?" in request
        else ""
    )
    return path + q


def deep_diff(
    ours: Any, theirs: Any, path: str, out: list[tuple[str, Any, Any]], rel_tol: float = 0.0
) -> None:
    """Append (path, ours, theirs) for every difference; numbers compare by value."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        for k in theirs:
            if k not in ours:
                out.append((f"{path}.{k}", "<missing>", theirs[k]))
            else:
                deep_diff(ours[k], theirs[k], f"{path}.{k}", out, rel_tol)
        for k in ours:
            if k not in theirs:
                out.append((f"{path}.{k}", ours[k], "<missing>"))
        return
    if isinstance(theirs, list) and isinstance(ours, list):
        if len(ours) != len(theirs):
            out.append((f"{path}.length", len(ours), len(theirs)))
        for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
            deep_diff(a, b, f"{path}.{i}", out, rel_tol)
        return
    if _is_num(ours) and _is_num(theirs):
        if ours == theirs or (
            isinstance(ours, float)
            and isinstance(theirs, float)
            and math.isnan(ours)
            and math.isnan(theirs)
        ):
            return
        if rel_tol and math.isclose(ours, theirs, rel_tol=rel_tol):
            return
        out.append((path, ours, theirs))
        return
    if ours != theirs or type(ours) is not type(theirs):
        out.append((path, ours, theirs))


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def compare_recording(
    recording: str | Path,
    log_dir: str | Path,
    client: FolderLogs | None = None,
    only: str | None = None,
) -> Report:
    recording = Path(recording)
    index = json.loads((recording / "index.json").read_text())["requests"]
    client = client or FolderLogs(log_dir, max_apps=4)
    report = Report()
    for key in sorted(index, key=_app_order):
        if only and only not in key:
            continue
        theirs = json.loads((recording / index[key]).read_bytes())
        path, _, query = key.partition("?")
        params = parse_qsl(query, keep_blank_values=True)
        report.requests += 1
        try:
            ours = client.answer(path, params)
        except (NotFound, BadRequest) as exc:
            report.failed_requests.append((key, f"{type(exc).__name__}: {exc}"))
            continue
        # Round trip through JSON: what the fetcher decodes.
        ours = json.loads(json.dumps(ours))
        diffs: list[tuple[str, Any, Any]] = []
        deep_diff(ours, theirs, "", diffs)
        in_progress = _in_progress(client, path)
        report.differences.extend(
            Difference(key, p.lstrip("."), a, b, in_progress) for p, a, b in diffs
        )
    return report


def _in_progress(client: FolderLogs, path: str) -> bool:
    parts = path.split("/")
    if len(parts) < 2 or parts[0] != "applications":
        return False
    try:
        app = client._app(parts[1], parts[2] if len(parts) > 2 else None)
    except NotFound:
        return False
    return not app.source.completed


def _app_order(key: str) -> tuple[str, str]:
    m = re.match(r"applications/([^/?]+)", key)
    return (m.group(1) if m else "", key)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("recording")
    ap.add_argument("log_dir")
    ap.add_argument("--show", type=int, default=3)
    ap.add_argument("--only", help="compare only request keys containing this text")
    args = ap.parse_args(argv)
    report = compare_recording(args.recording, args.log_dir, only=args.only)
    print(report.render(args.show))
    return 1 if report.unknown() or report.failed_requests else 0


if __name__ == "__main__":
    sys.exit(main())
