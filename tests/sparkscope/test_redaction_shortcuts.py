"""The shortcuts of sparkscope.redaction (checks that skip a pattern, a line or a case-insensitive
search) give what the plain form gives, on random texts made of secret-looking pieces."""

from __future__ import annotations

import random
import re

import pytest

from sparkscope import redaction as r
from sparkscope.config.settings import DEFAULT_REDACTION_REGEX

PIECES = (
    *("password", "PassWord", "Bypass", "pwd", "secret", "Token", "credential", "api_key", "KEY"),
    *("access.Key", "sig", "x.SIG", "signature", "Authorization: Bearer ", "bearer ", "sas", "key"),
    *("jdbc:oracle:thin:scott/tiger@host", "http://user:pw@host/", "AKIA", "AKIAABCDEFGHIJKLMNOP"),
    *("AIza" + "a" * 35, "ghp_" + "a" * 36, "gh", "github_pat_" + "a" * 22, "xoxb-1234567890ab"),
    *("dapi" + "0" * 32, "sk_live_" + "a" * 16, "eyJabcdefghij.eyJabcdefghij.abcdefghij", "A"),
    *("-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----", "PRIVATE KEY"),
    *("=", ":", " = ", ": ", '"', "'", "-", "--", " --password ", " -p ", "<", ">", "</", "@"),
    *("<password>", "</password>", "://", "\n", "\t", " ", ",", ";", "&", "(", ")", "*****"),
    *(r.REDACTED, "hunter2", "abc.def", "_", ".", "1234", "İ", "ſ", "\u212a", "Σ", "ı", "é"),
    *('"password": "hunter2"', "'secret': 'x'", "password='x'", "key=val", "user.password=abc"),
    "\tat org.apache.spark.shuffle.sort.BypassMergeSortShuffleWriter.write(Writer.java:143)",
)
KEY_PATTERNS = (None, DEFAULT_REDACTION_REGEX, r"(?i)user\w*", r"^password$", "x")


def _texts(count: int) -> list[str]:
    rng = random.Random(20240611)
    return ["".join(rng.choices(PIECES, k=rng.randint(1, 30))) for _ in range(count)]


def _pairs_in_line_plainly(line: str, pair: object) -> str:
    for name in ("json_pair", "repr_pair", "quoted_pair", "pair", "flag", "xml"):
        line = r.PATTERNS[name].sub(pair, line)  # type: ignore[call-overload]
    return line


def _redact_pairs_plainly(text: str, pattern: re.Pattern[str] | None, configured: bool) -> str:
    pair = r._mask_pair(pattern)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if r._has_stem(line) or (configured and pattern is not None and pattern.search(line)):
            lines[i] = _pairs_in_line_plainly(line, pair)
    return "\n".join(lines)


def test_no_replacement_brings_a_character_a_pattern_is_skipped_for_lacking() -> None:
    assert not set(r.REDACTED) & set(":\"'=-</")


def test_secret_words_are_lowercase_for_the_ascii_shortcut() -> None:
    words = r.SECRET_KEY_WORDS.removeprefix("(?i)")
    assert words == words.lower() and "(?" not in words


@pytest.mark.parametrize("key_pattern", KEY_PATTERNS)
def test_line_shortcuts_equal_the_plain_pass(key_pattern: str | None) -> None:
    pattern = None if key_pattern is None else re.compile(key_pattern)
    for text in _texts(1500):
        low = text.lower()
        stems = [stem for stem in r._STEMS if stem in low]
        for configured in (False, True):
            plain = _redact_pairs_plainly(text, pattern, configured)
            assert r._redact_pairs(text, low, stems, pattern, configured) == plain, text
            assert r._redact_pairs(text, low, list(r._STEMS), pattern, configured) == plain, text


def test_gate_and_key_shortcuts_equal_the_plain_checks() -> None:
    for text in _texts(3000):
        plain = any(prefix in text for prefix in r._TOKEN_PREFIXES)
        assert r._has_token_prefix(text) == plain, text
        for key in {text[:60], *re.findall(r"[\w.\-]{1,40}", text)}:
            assert r._names_secret(key) == (r._SECRET_KEY.search(key) is not None), key
    for lead, prefix in (("A", "AKIA"), ("gh", "ghr_"), ("A", "AIza")):
        for count in (0, 15, 16, 17, 40):
            assert r._has_token_prefix(lead * count + prefix)
            assert not r._has_token_prefix(lead * count + prefix[:-1])
