"""The heuristics config in force: read and validated from its YAML file, and, for a long-running
process, re-read when the file changes."""

from __future__ import annotations

import logging
import os
import threading

from heuristics.params import HeuristicsConfigError
from heuristics.registry import Registry, build_registry, builtin_heuristics
from sparkscope.config.loader import load_heuristics_mapping
from sparkscope.config.parsing import ConfigError

log = logging.getLogger(__name__)


def load_heuristics(path: str) -> Registry:
    """Read and validate the heuristics YAML; raise ConfigError naming the file and key."""
    mapping = load_heuristics_mapping(path)
    try:
        return build_registry(mapping)
    except HeuristicsConfigError as exc:
        raise ConfigError(path, exc.path, exc.message) from None


class HeuristicsState:
    """The heuristics config in force for a long-running process, re-read when the file changes.

    A bad edit never takes effect: the last valid registry stays in force and :meth:`current`
    reports the error (for as long as the file stays bad), so the page can say so.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._registry: Registry | None = None
        self._error: str | None = None

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def current(self) -> tuple[Registry, str | None]:
        """The registry in force and the error of the file on disk, if it is invalid."""
        stamp = self._file_stamp()
        with self._lock:
            if self._registry is None or stamp != self._stamp:
                self._stamp = stamp
                try:
                    self._registry = load_heuristics(self.path)
                    self._error = None
                except ConfigError as exc:
                    self._error = (
                        f"heuristics config not applied, previous one still in force: {exc}"
                    )
                    log.error("%s", self._error)
                    if self._registry is None:
                        # Defaults of the built-ins: a broken plugin must not stop the pages.
                        self._registry = build_registry({}, builtin_heuristics())
            return self._registry, self._error
