"""What one fetch run of a server is asked for, and what it did."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FetchOptions:
    """What one `sparkscope fetch` run asks for."""

    since_ms: int | None = None
    limit: int | None = None
    app_ids: tuple[str, ...] = ()
    threads: int | None = None
    backfill: bool = False
    reconcile: bool = False


@dataclass
class ServerResult:
    """The outcome of fetching from one server."""

    server: str
    seen: int = 0
    loaded: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    gave_up: list[str] = field(default_factory=list)
    #: loaded without a part that failed (its SQL executions): (app id, error); retried next run
    partial: list[tuple[str, str]] = field(default_factory=list)
    requests: int = 0
    bytes: int = 0
    seconds: float = 0.0
    unreachable: str | None = None
    locked: bool = False
