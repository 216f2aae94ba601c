"""Jinja filters: bytes, durations, times."""

from __future__ import annotations

import pytest

from sparkscope.views.filters import fmt_bytes, fmt_duration_ms, fmt_pct, fmt_time_ms


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "–"),
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.5 KiB"),
        (5 * 1024**3, "5.0 GiB"),
        (-2048, "-2.0 KiB"),
    ],
)
def test_bytes(value: int | None, text: str) -> None:
    assert fmt_bytes(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "–"),
        (0, "0.0s"),
        (450, "450ms"),
        (4200, "4.2s"),
        (61_000, "1m 01s"),
        (3_723_000, "1h 02m 03s"),
    ],
)
def test_duration(value: int | None, text: str) -> None:
    assert fmt_duration_ms(value) == text


def test_time_is_utc_iso() -> None:
    assert fmt_time_ms(0) == "1970-01-01T00:00:00Z"
    assert fmt_time_ms(1_795_971_819_513) == "2026-11-29T17:03:39Z"
    assert fmt_pct(12.345) == "+12.3%" and fmt_pct(None) == "–"
