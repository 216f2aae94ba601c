"""Regular expressions from the configuration, run on text from other people's jobs.

Python's ``re`` backtracks, so a pattern such as ``(a+)+$`` takes exponential time on a name of
thirty ``a``, and ``\\d+\\d+x`` cubic time on a long run of digits. A pattern from the config is
therefore admitted only if its worst case is bounded, and is run on texts no longer than that bound
allows:

* no quantifier that may repeat more than once (``*``, ``+``, ``{2}``, ``{1,5}``) over a
  sub-pattern that itself holds a variable quantifier or an alternation: the exponential shapes
  ``(a+)+``, ``(a*)*``, ``(a|a)*``, ``(\\w+\\s?)*``, ``(a?){30}``;
* no backreference (``\\1``, ``(?P=x)``, ``(?(1)..)``): matching with them is NP-hard;
* at most :data:`MAX_UNBOUNDED` quantifiers with a wide range (``*``, ``+``, ``{m,}``, or more than
  :data:`NARROW` choices) along any path, so the work per text position is polynomial of degree
  at most 2, and narrow ones (``?``, ``{1,4}``) multiplying it by at most :data:`MAX_FACTOR`.

From those counts the pattern gets a :attr:`SafePattern.limit`, the longest text on which its
worst case stays within :data:`BUDGET` steps: no limit in practice for a linear pattern (the
default redaction regex, ``\\d{4}-\\d{2}-\\d{2}``), 4,096 characters with one wide quantifier,
256 with two. :meth:`SafePattern.sub` rewrites only the first ``limit`` characters and keeps the
rest; :meth:`SafePattern.search` scans a longer text in overlapping windows (it finds every match
up to half a window long).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

#: Longest pattern admitted.
MAX_PATTERN = 1000
#: Most wide quantifiers (``*``, ``+``, ``{m,}``) along one path through the pattern.
MAX_UNBOUNDED = 2
#: A bounded quantifier with at most this many choices (``{1,4}``: 4) counts as narrow.
NARROW = 16
#: Largest product of the narrow quantifiers' choices.
MAX_FACTOR = 256
#: Worst-case steps one search or substitution may take (about 0.1-0.2 s of CPython's ``re``).
BUDGET = 2**24
#: Longest window :meth:`SafePattern.search` runs a superlinear pattern on.
SEARCH_WINDOW = 1024

_REPEATS = {C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT)}
_ATOMIC = getattr(C, "ATOMIC_GROUP", None)


@dataclass(frozen=True)
class SafePattern:
    """An admitted pattern and the longest text it may run on at once."""

    pattern: str
    compiled: re.Pattern[str] = field(compare=False, repr=False)
    limit: int = field(compare=False)
    #: Wide quantifiers along the worst path (0: linear in the text's length).
    unbounded: int = field(default=0, compare=False)

    def search(self, text: str | None) -> bool:
        """True when the pattern matches somewhere in ``text``.

        A text longer than :attr:`window` is scanned in windows of that length, each starting
        half a window after the previous one, so every match up to half a window long is found;
        a match that ends at the end of a window other than the last is left to the next window
        (it may be cut short there, or be ``$`` meeting the window's end).
        """
        if text is None:
            return False
        n, size = len(text), self.window
        if n <= size:
            return self.compiled.search(text) is not None
        step = max(1, size // 2)
        pos = 0
        while True:
            end = min(n, pos + size)
            m = self.compiled.search(text, pos, end)
            if m is not None and (end == n or m.end() < end):
                return True
            if end == n:
                return False
            pos += step

    @property
    def window(self) -> int:
        """The length :meth:`search` matches at once: the whole :attr:`limit` for a linear
        pattern; for a superlinear one at most :data:`SEARCH_WINDOW`, so that scanning a long
        text costs at most ``2 * n * SEARCH_WINDOW ** unbounded`` steps."""
        return self.limit if self.unbounded == 0 else min(self.limit, SEARCH_WINDOW)

    def sub(self, repl: str, text: str) -> str:
        """``text`` with every match replaced, within its first :attr:`limit` characters."""
        if len(text) <= self.limit:
            return self.compiled.sub(repl, text)
        return self.compiled.sub(repl, text[: self.limit]) + text[self.limit :]


@dataclass
class _Cost:
    unbounded: int = 0  # wide quantifiers along the worst path
    factor: int = 1  # product of the narrow quantifiers' choices

    def then(self, other: _Cost) -> None:
        self.unbounded += other.unbounded
        self.factor *= other.factor


def _cost(sub: Any, inside_repeat: bool) -> _Cost:
    """The cost of a parsed sequence; raises ValueError on a shape that can take exponential time."""
    total = _Cost()
    for op, av in sub:
        if op in (C.GROUPREF, C.GROUPREF_EXISTS):
            raise ValueError("backreferences are not allowed in a pattern")
        if op is C.BRANCH:
            if inside_repeat:
                raise ValueError(
                    "an alternation under a repeating quantifier such as (ab|a)+ can take "
                    "exponential time; use a character class or write the repetition out"
                )
            alternatives = [_cost(alt, inside_repeat) for alt in av[1]]
            total.then(
                _Cost(max(a.unbounded for a in alternatives), sum(a.factor for a in alternatives))
            )
        elif op in _REPEATS:
            lo, hi, item = av
            if lo != hi:
                if inside_repeat:
                    raise ValueError(
                        "nested quantifiers such as (a+)+ can take exponential time; write the "
                        "pattern without a variable quantifier inside a repeated group"
                    )
                if hi == C.MAXREPEAT or hi - lo + 1 > NARROW:
                    total.unbounded += 1
                else:
                    total.factor *= hi - lo + 1
            total.then(_cost(item, inside_repeat or hi > 1))
        elif op is C.SUBPATTERN:
            total.then(_cost(av[3], inside_repeat))
        elif op in (C.ASSERT, C.ASSERT_NOT):
            total.then(_cost(av[1], inside_repeat))
        elif op is _ATOMIC:
            total.then(_cost(av, inside_repeat))
    return total


def _limit(cost: _Cost) -> int:
    """The longest text whose worst case, ``n ** (1 + unbounded) * factor`` steps, fits BUDGET."""
    per_factor = BUDGET / cost.factor
    return max(64, int(per_factor ** (1.0 / (1 + cost.unbounded))))


def compile_safe(value: Any, max_unbounded: int = MAX_UNBOUNDED) -> SafePattern:
    """Compile and admit a pattern, or raise ValueError saying in one line why not.

    ``max_unbounded``: the most wide quantifiers along one path (1 for a pattern searched in long
    texts, such as the redaction regex over property values)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a regular expression, got {value!r}")
    if len(value) > MAX_PATTERN:
        raise ValueError(f"a pattern may be at most {MAX_PATTERN} characters")
    try:
        compiled = re.compile(value)
        tree = _parser.parse(value)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    except RecursionError:
        raise ValueError("not a valid regular expression: nested too deeply") from None
    cost = _cost(tree, False)
    if cost.unbounded > max_unbounded:
        raise ValueError(
            f"at most {max_unbounded} unbounded quantifier{'s' if max_unbounded > 1 else ''} "
            f"(*, +, {{m,}}) one after another, found {cost.unbounded}: more can take "
            "polynomial time of a high degree on a long text"
        )
    if cost.factor > MAX_FACTOR:
        raise ValueError(
            f"the optional parts (?, {{m,n}}) allow {cost.factor} ways to match at one place, "
            f"more than {MAX_FACTOR}"
        )
    return SafePattern(value, compiled, _limit(cost), cost.unbounded)


@lru_cache(maxsize=256)
def admitted(pattern: str, max_unbounded: int = MAX_UNBOUNDED) -> SafePattern:
    """:func:`compile_safe`, once per pattern (config patterns are few and reused)."""
    return compile_safe(pattern, max_unbounded)
