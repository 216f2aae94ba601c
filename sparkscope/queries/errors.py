"""Lookup errors of the read side, mapped to 404 / 409 by the views."""

from __future__ import annotations

from collections.abc import Sequence


class NotFoundError(LookupError):
    """No application matches the given id (and server / attempt)."""


class AmbiguousAppError(LookupError):
    """The application id exists on several History Servers; `servers` lists their names."""

    def __init__(self, app_id: str, servers: Sequence[str]) -> None:
        super().__init__(f"application {app_id} exists on several servers: {', '.join(servers)}")
        self.app_id = app_id
        self.servers = list(servers)
