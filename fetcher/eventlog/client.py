"""One replayed application answering the fetcher's requests, as ``ShsClient.get_json`` does.

:func:`fetcher.shs.request_plan.fetch_app` only calls ``client.get_json((path, params))``; this
object answers those requests from a replayed log, with the History Server's errors mapped to the
fetcher's: 404 -> :class:`~fetcher.shs.client.ShsNotFound` (the task-summary fallback and unknown
stages rely on it), 400 -> :class:`~fetcher.shs.client.ShsHttpError`. So the parse and load code
runs unchanged over event logs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fetcher.eventlog.app import ReplayedApp
from fetcher.eventlog.params import BadRequest, NotFound
from fetcher.shs.client import ShsHttpError, ShsNotFound
from fetcher.shs.endpoints import Params, request_key


class ReplayedAppClient:
    """The REST answers of one replayed application attempt."""

    def __init__(self, app: ReplayedApp) -> None:
        self.app = app
        self.requests = 0

    def get_json(
        self, request: tuple[str, Params], mark_hostile: bool = False, unread: Sequence[str] = ()
    ) -> Any:
        """Answer one ``(path, params)`` request (``mark_hostile`` has nothing to mark: the
        values come from the log's JSON, whose numbers the reader already refused past int64;
        ``unread`` members are built like the others: they cost nothing to decode here)."""
        path, params = request
        self.requests += 1
        where = f"{self.app.source.path} -> {request_key(path, params)}"
        try:
            return self.app.get(path, params)
        except NotFound as exc:
            raise ShsNotFound(where, f"not found: {exc}") from None
        except BadRequest as exc:
            raise ShsHttpError(where, 400, f"HTTP 400: {exc}") from None
