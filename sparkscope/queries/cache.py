"""A per-process cache of computed page parts (dashboard figures, name lists, resources)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from cachetools import TTLCache
from sqlalchemy.orm import Session

T = TypeVar("T")

#: Entries kept per time-to-live; the least recently used goes first when a cache is full.
MAX_ENTRIES = 512

# One TTLCache per time-to-live (a TTLCache has a single one); one lock guards them all, since
# cachetools caches are not thread-safe and gunicorn may serve from threads.
_CACHES: dict[float, TTLCache[tuple[Any, ...], Any]] = {}
_LOCK = threading.Lock()


def cached(key: tuple[Any, ...], ttl_s: float, compute: Callable[[], T]) -> T:
    """``compute()``, reused for ``ttl_s`` seconds per key in this process (0 disables)."""
    if ttl_s <= 0:
        return compute()
    with _LOCK:
        cache = _CACHES.get(ttl_s)
        if cache is None:
            cache = _CACHES[ttl_s] = TTLCache(maxsize=MAX_ENTRIES, ttl=ttl_s)
        try:
            hit: T = cache[key]
            return hit
        except KeyError:
            pass
    # Computed outside the lock: a slow query must not hold up other requests' cache hits.
    value = compute()
    with _LOCK:
        cache[key] = value
    return value


def clear() -> None:
    """Forget every cached value (tests, and after a database is replaced)."""
    with _LOCK:
        for cache in _CACHES.values():
            cache.clear()


def db_key(session: Session) -> str:
    """Identity of the session's database, for per-process caches."""
    return str(session.get_bind().engine.url)
