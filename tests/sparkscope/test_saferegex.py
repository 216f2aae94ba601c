"""Config regexes admitted only when their backtracking is bounded, and run on bounded texts."""

from __future__ import annotations

import re
import time

import pytest

from sparkscope.advisor.predict.features import recurring_key
from sparkscope.saferegex import SEARCH_WINDOW, compile_safe

DEFAULT_REDACTION = (
    r"(?i)secret|password|passwd|token|access[.]?key|private[.]?key|credential|account[.]?key"
)


@pytest.mark.parametrize(
    "pattern",
    [
        "^nightly_.*",
        r"^(etl|ingest)_\w+$",
        r"(?i)report-\d{4}-\d{2}",
        r"(?:_\d+)?$",
        "[ab]*c",
        r"^legacy_",
        r"(\d{4}-){2}x",
        r"\d{4}-\d{2}-\d{2}",
        r"\s*\(run \d+\)",
        r"_(build|export|training)$",
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        DEFAULT_REDACTION,
    ],
)
def test_ordinary_patterns_are_admitted(pattern: str) -> None:
    assert compile_safe(pattern).pattern == pattern


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(a+)+$", "nested quantifiers"),
        ("(a*)*b", "nested quantifiers"),
        (r"(\w+\s?)*$", "nested quantifiers"),
        ("(a?){30}a{30}", "nested quantifiers"),
        ("(ab|a)*c", "alternation under a repeating quantifier"),
        ("(x|x)+y", "alternation under a repeating quantifier"),
        (r"(a)\1", "backreferences"),
        (r"(?P<x>a)(?P=x)", "backreferences"),
        (".*a.*a.*b", "at most 2 unbounded quantifiers"),
        (r"\d+\d+\d+x", "at most 2 unbounded quantifiers"),
        ("a?" * 9 + "b", "ways to match"),
        ("x" * 1001, "at most 1000 characters"),
        ("(", "not a valid regular expression"),
        ("", "expected a regular expression"),
        (3, "expected a regular expression"),
    ],
)
def test_catastrophic_or_broken_patterns_are_refused_in_one_line(pattern: object, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)) as err:
        compile_safe(pattern)
    assert "\n" not in str(err.value)


def test_the_redaction_regex_may_hold_one_unbounded_quantifier_only() -> None:
    assert compile_safe(r"fs\.s3a.*key", max_unbounded=1)
    with pytest.raises(ValueError, match="at most 1 unbounded quantifier "):
        compile_safe(r"pass.*word.*", max_unbounded=1)


def test_key_patterns_on_a_hostile_3000_character_name_stay_fast() -> None:
    # Unguarded, re.sub of these on such names takes 11 s to 2 min (measured on this project's
    # 2-core machine); admitted, each runs on at most its limit (~0.02-0.07 s measured).
    hostile = {
        r"\d+\d+x": "1" * 3000,
        ".*a.*b": "a" * 3000,
        r"\s*\s*x": " " * 3000,
        r"\d+x": "1" * 3000,
    }
    for pattern, name in hostile.items():
        start = time.perf_counter()
        assert recurring_key(name, [pattern]) == name  # nothing matched, the name is its key
        assert time.perf_counter() - start < 1.0, pattern


def test_a_superlinear_key_pattern_rewrites_the_head_of_a_long_name() -> None:
    p = compile_safe(r"\d+_\d+")
    assert p.limit < 3000
    name = "etl 2024_01 " + "x" * 3000 + " 2024_02"
    assert p.sub("", name) == "etl  " + "x" * 3000 + " 2024_02"
    # A linear pattern sees the whole name.
    assert recurring_key("etl " + "x" * 3000 + " 2024-01-02", [r" \d{4}-\d{2}-\d{2}"]) == (
        "etl " + "x" * 3000
    )


def test_search_in_a_long_text_finds_late_matches_and_keeps_anchors() -> None:
    p = compile_safe(r"password=\S+", max_unbounded=1)
    assert p.window == SEARCH_WINDOW
    text = "a " * 50_000 + "password=hunter2 " + "b " * 10
    assert p.search(text)
    assert not p.search("a " * 50_000)
    assert compile_safe(r"^x\w*y").search("x" + "z" * 400 + "y" + " z" * 5000)
    assert not compile_safe(r"^y\d*").search("a" * 5000 + "y1")  # ^ is the text's start only
    start = time.perf_counter()
    assert not compile_safe(r"\d+x", max_unbounded=1).search("1" * 20_000)
    assert time.perf_counter() - start < 2.0  # ~0.25 s measured; unwindowed ~10 s
