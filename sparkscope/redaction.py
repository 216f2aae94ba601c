"""Masking of secrets, shared by the fetcher (before anything is stored) and the web app (again on
display): credentials in URLs, Spark properties whose key or value names a secret, and secrets
inside free text (command lines, error messages, descriptions) recognised by their shape.

Three levels:

* :func:`split_credentials` / :func:`without_credentials`: the ``user:password@`` of a URL.
* :func:`redact_text`: free text keeps its words; only the secret parts become
  :data:`REDACTED` -- URL userinfo, the value of ``password=...``, ``"secret": "..."``,
  ``--token X`` and other pairs whose key names a secret, PEM private keys, and tokens known by
  their form (AWS access key ids, Databricks, GitHub, Slack, Google API keys, JWTs, bearer and
  basic authorization headers).
* :func:`redact`: a Spark property as Spark redacts it -- the whole value is masked when its key or
  its value matches the configured pattern -- plus :func:`redact_text` on every other value; a
  command line (``sun.java.command``) is free text, so its arguments stay for the predictions.

Every pattern here has bounded quantifiers that cannot backtrack into each other, so the work is
linear in the text's length (a test runs each on hostile texts).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

REDACTED = "*********(redacted)"

#: Properties whose value is a command line: redacted as free text, not masked whole.
COMMAND_LINE_PROPERTIES = frozenset({"sun.java.command"})

#: Words that make the key of a ``key=value`` pair a secret's name, in free text.
SECRET_KEY_WORDS = (
    r"(?i)password|passwd|passphrase|\bpass\b|pwd|secret|token|credential|api[_.\-]?key"
    r"|access[_.\-]?key|private[_.\-]?key|account[_.\-]?key|sas[_.\-]?key|signature|\bsig\b"
    r"|session[_.\-]?key|client[_.\-]?key|auth[_.\-]?key"
)
_SECRET_KEY = re.compile(SECRET_KEY_WORDS)
#: The same words without ``(?i)``, for a lowercased ASCII key: there ``(?i)`` matches what the
#: lowercase words match in the lowercased key (case folds beyond ASCII, such as the long s or
#: the Kelvin sign, need a non-ASCII character), and ignoring case costs the engine three times
#: as much.
_SECRET_KEY_LOWER = re.compile(SECRET_KEY_WORDS.removeprefix("(?i)"))

#: Every pattern below, by name. Each quantifier is bounded and no two overlap in a way that
#: backtracks, so the work is linear in the text (a test runs each on hostile texts). A key
#: followed by what no key character can be (``\s``, ``=``, ``:``) is possessive (``{0,200}+``):
#: only its longest run can be followed so, and the engine need not give characters back to
#: find that out (the matches are those of the greedy form).
PATTERNS: dict[str, re.Pattern[str]] = {
    # user:password@ in a URL of any scheme (a user alone, as in wasbs://container@account, stays)
    "userinfo": re.compile(
        r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]{0,30}://)(?P<secret>[^\s/@:]{0,256}:[^\s/@]{1,512})(?=@)"
    ),
    # jdbc:oracle:thin:scott/tiger@host
    "oracle": re.compile(
        r"(?i)(?P<head>jdbc:oracle:\w{1,10}:[^/@\s:;]{1,128}/)(?P<secret>[^@\s]{1,256})(?=@)"
    ),
    # the body is base64 (with line breaks, also JSON-escaped): it cannot run past a "-----"
    "pem": re.compile(
        r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----[A-Za-z0-9+/=\s\\]{0,8000}"
        r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----"
    ),
    "authorization": re.compile(
        r"(?i)(?P<head>\b(?:proxy-)?authorization\s{0,8}[:=]\s{0,8}['\"]?"
        r"(?:(?:basic|bearer|token|digest|negotiate|sharedkey|aws4-hmac-sha256)\s{1,8})?)"
        r"(?P<secret>[^\s'\",;]{1,4096})"
    ),
    "bearer": re.compile(r"(?i)(?P<head>\bbearer\s{1,8})(?P<secret>[A-Za-z0-9\-._~+/]{8,4096}=*)"),
    # Tokens recognised by their own form, wherever they appear.
    "tokens": re.compile(
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"  # AWS access key ids
        r"|\bdapi[0-9a-f]{32}(?:-[0-9]{1,3})?\b"  # Databricks personal access tokens
        r"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b"  # GitHub tokens
        r"|\bgithub_pat_[A-Za-z0-9_]{22,255}"  # GitHub fine-grained tokens
        r"|\bxox[abeoprs]-[A-Za-z0-9\-]{10,255}"  # Slack tokens
        r"|\bhooks\.slack\.com/services/[A-Za-z0-9/]{10,255}"  # Slack webhook URLs
        r"|\bAIza[0-9A-Za-z\-_]{35}"  # Google API keys
        r"|\b[sr]k_live_[0-9A-Za-z]{16,255}"  # Stripe secret keys
        r"|\beyJ[A-Za-z0-9_\-]{8,1024}\.eyJ[A-Za-z0-9_\-]{8,8192}\.[A-Za-z0-9_\-]{8,2048}"  # JWT
    ),
    # "key": "value" with the key in quotes (JSON, Python reprs)
    "json_pair": re.compile(
        r"(?P<head>\"(?P<key>[^\"\n]{1,128})\"\s{0,8}:\s{0,8}\")(?P<secret>[^\"\n]{1,20000})(?=\")"
    ),
    "repr_pair": re.compile(
        r"(?P<head>'(?P<key>[^'\n]{1,128})'\s{0,8}:\s{0,8}')(?P<secret>[^'\n]{1,20000})(?=')"
    ),
    # key="value", key='value' (JAAS configs, connection options)
    "quoted_pair": re.compile(
        r"(?P<head>(?<![\w.\-])(?P<key>[A-Za-z_][\w.\-]{0,200}+)\s{0,8}[=:]\s{0,8}[\"'])"
        r"(?P<secret>[^\"'\n]{1,4096})(?=[\"'])"
    ),
    # key=value, key: value, -Dkey=value, ?key=value&
    "pair": re.compile(
        r"(?P<head>(?<![\w.])(?P<key>[A-Za-z_][\w.\-]{0,200}+)\s{0,4}(?:=|:(?!//))\s{0,4})"
        r"(?P<secret>[^\s,;&\"'<>(){}\[\]]{1,4096})"
    ),
    # --password hunter2
    "flag": re.compile(
        r"(?P<head>(?<!\S)--?(?P<key>[A-Za-z][\w.\-]{0,100}+)\s{1,8})(?P<secret>[^\s\-]\S{0,4095})"
    ),
    # <password>hunter2</password>
    "xml": re.compile(
        r"(?P<head><(?P<key>[A-Za-z_][\w.\-]{0,100})>)(?P<secret>[^<]{1,4096})(?=</)"
    ),
}

#: A cheap first look, by substring (C speed, no regex): a text in which none of these occurs
#: holds no secret of a known shape. A pair needs a key naming a secret (each word of
#: SECRET_KEY_WORDS holds one of the lowercase stems), a URL's password ``://`` and ``@``.
_STEMS = (
    *("pass", "pwd", "secret", "token", "credential", "key", "sig", "auth", "sas", "bearer"),
    "oracle",
)
_TOKEN_PREFIXES = (
    *("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),
    *("dapi", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "hooks.slack.com"),
    *("AIza", "_live_", "eyJ", "PRIVATE KEY"),
)


@lru_cache(maxsize=64)
def _implies_stem(pattern: str) -> bool:
    """Whether every match of ``pattern`` holds one of the stems, so that a text without any can
    be passed over without running it: true for an alternation of words such as the default
    redaction regex (each alternative holds a stem not followed by a quantifier)."""
    body = pattern.removeprefix("(?i)")
    if not body or any(c in body for c in "()\\"):
        return False

    def literal(stem: str, alternative: str) -> bool:
        at = alternative.find(stem)
        while at >= 0:
            if alternative[at + len(stem) : at + len(stem) + 1] not in ("?", "*", "+", "{"):
                return True
            at = alternative.find(stem, at + 1)
        return False

    return all(any(literal(stem, alt.lower()) for stem in _STEMS) for alt in body.split("|"))


def _matches(pattern: re.Pattern[str], text: str) -> bool:
    """``pattern.search(text)``, skipped when the pattern needs a stem the text lacks."""
    if _implies_stem(pattern.pattern) and not _has_stem(text):
        return False
    return pattern.search(text) is not None


def _has_stem(text: str) -> bool:
    """Whether ``text`` holds a word that may name a secret (substring checks: C speed)."""
    low = text.lower()
    for stem in _STEMS:
        if stem in low:
            return True
    return False


#: The prefixes by a common start, each group looked for at the start's few occurrences (one scan
#: of the text for a group instead of one per prefix); the others one by one.
_AWS_PREFIXES = tuple(p for p in _TOKEN_PREFIXES if p.startswith("A"))
_GITHUB_PREFIXES = tuple(p for p in _TOKEN_PREFIXES if p.startswith("gh"))
_OTHER_PREFIXES = tuple(p for p in _TOKEN_PREFIXES if not p.startswith(("A", "gh")))


def _has_token_prefix(text: str) -> bool:
    """Whether one of :data:`_TOKEN_PREFIXES` occurs in ``text``."""
    for prefix in _OTHER_PREFIXES:
        if prefix in text:
            return True
    # ("in" first: most texts hold no "gh", many no "A", and "in" costs less than a find call)
    return ("A" in text and _starts_at_one(text, "A", _AWS_PREFIXES)) or (
        "gh" in text and _starts_at_one(text, "gh", _GITHUB_PREFIXES)
    )


def _starts_at_one(text: str, lead: str, prefixes: tuple[str, ...]) -> bool:
    """Whether one of ``prefixes`` (each starting with ``lead``) occurs in ``text``: tried at the
    first few occurrences of ``lead``, then (a text full of them) by a scan per prefix."""
    at = text.find(lead)
    for _ in range(16):
        if at < 0:
            return False
        if text.startswith(prefixes, at):
            return True
        at = text.find(lead, at + 1)
    return at >= 0 and any(text.find(prefix, at) >= 0 for prefix in prefixes)


def _gates(text: str, key_pattern: re.Pattern[str] | None) -> tuple[set[str], bool, str, list[str]]:
    """The patterns worth running on ``text``, found by substring checks (a pattern that needs a
    word the text lacks cannot match); whether lines should also be tried against the
    configured pattern (only when its matches need not hold a stem); the lowercased text and
    the stems in it (for the pairs: only the lines of these stems are looked at)."""
    url = "@" in text and "://" in text
    low = text.lower()
    stems = [stem for stem in _STEMS if stem in low]
    token = _has_token_prefix(text)
    configured = (
        key_pattern is not None
        and not _implies_stem(key_pattern.pattern)
        and key_pattern.search(text) is not None
    )
    gates: set[str] = set()
    if not (url or stems or token or configured):
        return gates, False, low, stems  # most texts: a name, a description, a short message
    if url:
        gates.add("userinfo")
    if token:
        gates.add("tokens")
    if stems or configured:
        gates.add("pairs")
        for name, word, stem in _WORD_GATES:
            if stem in stems and word in low:
                gates.add(name)
    return gates, configured, low, stems


#: Patterns that need one word, and the stem the word holds (no stem, no word).
_WORD_GATES = (
    ("oracle", "jdbc:oracle", "oracle"),
    ("pem", "private key", "key"),
    ("authorization", "authorization", "auth"),
    ("bearer", "bearer", "bearer"),
)


def split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """(the URL without ``user:password@``, the user name, the password), percent-decoded."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, None, None
    if "@" not in parts.netloc:
        return url, None, None
    userinfo, _at, hostport = parts.netloc.rpartition("@")
    user, colon, password = userinfo.partition(":")
    bare = urlunsplit(parts._replace(netloc=hostport))
    return bare, unquote(user) or None, unquote(password) if colon else None


def without_credentials(url: str) -> str:
    """The URL without any ``user:password@`` (as every page, link, log line and row holds it)."""
    return split_credentials(url)[0]


def _mask_group(match: re.Match[str]) -> str:
    return match.group("head") + REDACTED


def _mask_pair(key_pattern: re.Pattern[str] | None) -> Callable[[re.Match[str]], str]:
    """A replacement that masks a pair's value when its key names a secret."""

    def mask(match: re.Match[str]) -> str:
        key, secret = match.group("key"), match.group("secret")
        if secret.startswith("*****"):  # masked already
            return match.group(0)
        # every word of SECRET_KEY_WORDS holds a stem: a cheap first look
        named = (_has_stem(key) and _names_secret(key)) or (
            key_pattern is not None and _matches(key_pattern, key)
        )
        return match.group("head") + REDACTED if named else match.group(0)

    return mask


def _names_secret(key: str) -> bool:
    """Whether :data:`SECRET_KEY_WORDS` matches in ``key``."""
    if key.isascii():
        return _SECRET_KEY_LOWER.search(key.lower()) is not None
    return _SECRET_KEY.search(key) is not None


def redact_text(text: str | None, key_pattern: re.Pattern[str] | str | None = None) -> str | None:
    """``text`` with every secret part masked and everything else kept.

    ``key_pattern`` (the configured redaction regex) marks more keys as secret names, besides
    :data:`SECRET_KEY_WORDS`.
    """
    if not text:
        return text
    pattern = re.compile(key_pattern) if isinstance(key_pattern, str) else key_pattern
    gates, configured, low, stems = _gates(text, pattern)
    if not gates:
        return text
    out = text
    for name in _ORDER:
        if name in gates:
            out = PATTERNS[name].sub(_REPLACE[name], out)  # type: ignore[arg-type]
    if "pairs" in gates:
        if out is not text:  # a secret masked: look again (the stems are fewer, if anything)
            low, stems = out.lower(), list(_STEMS)
        out = _redact_pairs(out, low, stems, pattern, configured)
    return out


def _redact_pairs(
    text: str, low: str, stems: list[str], pattern: re.Pattern[str] | None, configured: bool
) -> str:
    """The pair patterns on each line that holds a stem (or, when ``configured``, matches the
    configured pattern): a pair lies on one line, and most lines of a stack trace name no secret.
    The lines with a stem are found from the occurrences of ``stems`` (those in the text) in
    ``low``, the lowercased text (where lowercasing keeps every position, i.e. the length), not
    by splitting it into lines."""
    pair = _mask_pair(pattern)
    if configured or len(low) != len(text):
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if _has_stem(line) or (configured and pattern is not None and pattern.search(line)):
                lines[i] = _pairs_in_line(line, pair)
        return "\n".join(lines)
    spans: set[tuple[int, int]] = set()  # (start, end) of each line holding a stem
    for stem in stems:
        at = low.find(stem)
        while at >= 0:
            end = low.find("\n", at)
            if end < 0:
                end = len(low)
            spans.add((low.rfind("\n", 0, at) + 1, end))
            at = low.find(stem, end)  # the line's other occurrences add nothing
    if not spans:
        return text
    pieces: list[str] = []
    done = 0
    for start, end in sorted(spans):
        pieces += (text[done:start], _pairs_in_line(text[start:end], pair))
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def _pairs_in_line(line: str, pair: Callable[[re.Match[str]], str]) -> str:
    """The pair patterns, in order, on one line; each is skipped when the line lacks a character
    every match of it holds (a match's replacement brings none of these: REDACTED has none)."""
    colon, double, single = ":" in line, '"' in line, "'" in line
    if colon and double:
        line = PATTERNS["json_pair"].sub(pair, line)
    if colon and single:
        line = PATTERNS["repr_pair"].sub(pair, line)
    assign = colon or "=" in line
    if assign and (double or single):
        line = PATTERNS["quoted_pair"].sub(pair, line)
    if assign:
        line = PATTERNS["pair"].sub(pair, line)
    if "-" in line:
        line = PATTERNS["flag"].sub(pair, line)
    if "</" in line:
        line = PATTERNS["xml"].sub(pair, line)
    return line


#: The order the patterns run in: whole blocks and URLs first, then tokens (then pairs).
_ORDER = ("pem", "userinfo", "oracle", "authorization", "bearer", "tokens")
_REPLACE: dict[str, Any] = {
    "pem": REDACTED,
    "tokens": REDACTED,
    "userinfo": _mask_group,
    "oracle": _mask_group,
    "authorization": _mask_group,
    "bearer": _mask_group,
}


def redact(name: str, value: str | None, pattern: re.Pattern[str] | str) -> str | None:
    """A Spark property's value: masked whole when the key or the value matches ``pattern``, as
    Spark does; otherwise (and always for a command line) with :func:`redact_text` applied."""
    if value is None:
        return None
    compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
    if name in COMMAND_LINE_PROPERTIES:
        return redact_text(value, compiled)
    if _matches(compiled, name) or _matches(compiled, value):
        return REDACTED
    return redact_text(value, compiled)


def redact_json(data: Any, key_pattern: re.Pattern[str] | str | None = None) -> Any:
    """A JSON-like value with :func:`redact_text` applied to every string in it."""
    if isinstance(data, str):
        return redact_text(data, key_pattern)
    if isinstance(data, dict):
        return {k: redact_json(v, key_pattern) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [redact_json(v, key_pattern) for v in data]
    return data
