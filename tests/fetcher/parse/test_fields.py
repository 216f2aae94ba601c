"""SHS timestamps: the fast path for the form every SHS writes gives what strptime gives, and
anything else still goes through strptime."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from fetcher.parse.fields import parse_time_ms


def _strptime_ms(text: str) -> int | None:
    text = text.strip().replace("GMT", "+0000").replace("Z", "+0000")
    for fmt in ("%Y-%m-%dT%H:%M:%S.%f%z", "%Y-%m-%dT%H:%M:%S%z"):
        try:
            return int(datetime.strptime(text, fmt).timestamp() * 1000)
        except ValueError:
            continue
    return None


def test_the_shs_form_gives_what_strptime_gives() -> None:
    rng = random.Random(7)
    for _ in range(5000):
        ms = rng.randrange(0, 4_102_444_800_000)  # 1970 .. 2100
        dt = datetime.fromtimestamp(ms / 1000, UTC)
        text = dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}GMT"
        assert parse_time_ms(text) == _strptime_ms(text), text


def test_any_date_and_time_in_the_shs_form_gives_what_strptime_gives() -> None:
    # Every field drawn past its range too (month 13, day 31 of a short month, hour 24,
    # second 60), and years far from the epoch: the day arithmetic against datetime's.
    rng = random.Random(11)
    for _ in range(5000):
        y, mo, d = rng.randint(1, 9999), rng.randint(0, 13), rng.randint(0, 32)
        hh, mm, ss, ms = (
            rng.randint(0, 25),
            rng.randint(0, 61),
            rng.randint(0, 61),
            rng.randint(0, 999),
        )
        text = f"{y:04d}-{mo:02d}-{d:02d}T{hh:02d}:{mm:02d}:{ss:02d}.{ms:03d}GMT"
        assert parse_time_ms(text) == _strptime_ms(text), text


@pytest.mark.parametrize(
    "text",
    [
        "2026-02-30T10:00:00.000GMT",  # no such day
        "2026-11-29T24:00:00.000GMT",  # no such hour
        " 2026-11-29T17:07:08.478GMT",  # whitespace: the slow path strips it
        "2026-11-29T17:07:08GMT",  # no milliseconds
        "2026-11-29T17:07:08.478Z",
        "2026-11-29T17:07:08.478+0100",
        "2026-11-29T17:07:08.4785GMT",
        "2026-1١-29T17:07:08.478GMT",  # a digit that is not ASCII
        "yesterday",
    ],
)
def test_other_texts_parse_as_strptime_parses_them(text: str) -> None:
    assert parse_time_ms(text) == _strptime_ms(text)


def test_texts_one_character_off_the_shs_form_parse_as_strptime_parses_them() -> None:
    # The form is recognised by its bytes with every digit made a 0: a separator, digit or
    # suffix replaced by anything else (a letter, a week date's W, a comma, a space, a digit
    # that is not ASCII) leaves the fast path, as the regular expression it replaces did.
    rng = random.Random(13)
    base = "2026-11-29T17:07:08.478GMT"
    others = "0123456789-T:.GMZW, +/\u0661\u00e9x"
    for _ in range(5000):
        chars = list(base)
        for _ in range(rng.randint(1, 2)):
            chars[rng.randrange(len(chars))] = rng.choice(others)
        text = "".join(chars)
        assert parse_time_ms(text) == _strptime_ms(text), text
