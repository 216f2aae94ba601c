"""The prediction forms' switches set for a test: ``sparkscope.advisor.predict.candidates.OPTIONS``
with some fields changed, put back however the test ends."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sparkscope.advisor.predict import candidates


@contextmanager
def prediction_options(**changes: Any) -> Iterator[candidates.Options]:
    """``candidates.OPTIONS`` with ``changes`` (the forms docs/dev/models.md compares) for the
    duration of the block."""
    old = candidates.OPTIONS
    candidates.OPTIONS = dataclasses.replace(old, **changes)
    try:
        yield candidates.OPTIONS
    finally:
        candidates.OPTIONS = old
