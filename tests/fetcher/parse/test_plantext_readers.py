"""The plan text's fast readers give what the line-by-line regular expressions give."""

from __future__ import annotations

import random

from fetcher.parse.sql.opblocks import (
    _DETAIL_HEAD_RE,
    _FIELD_LINES_RE,
    _FIELD_RE,
    _detail_head,
)

PIECES = (
    *("(", ")", "1", "27", "\u0663", "\u00b2", " ", "  ", "\t", "\u00a0", "\r", "\x1c", "[", "]"),
    *("codegen id", ":", " : ", "x", "Scan parquet", "[codegen id : 3]", "[codegen id:", "[2]"),
    *("Output", "Key", "A" * 39, "lower", "#", ","),
)


def _lines(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        line = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 10)))
        out.append(f"({rng.randint(0, 99)}){line}" if rng.random() < 0.5 else line)
    return out


def test_the_detail_head_reader_is_the_regular_expression() -> None:
    for line in _lines(1, 50_000):
        m = _DETAIL_HEAD_RE.match(line)
        want = m and (int(m.group(1)), m.group(2).strip(), int(m.group(3)) if m.group(3) else None)
        assert _detail_head(line) == (want or None), line


def test_the_block_field_reader_is_the_line_reader() -> None:
    lines = _lines(2, 20_000)
    for k in range(0, len(lines), 5):
        block = lines[k : k + 5]
        got = _FIELD_LINES_RE.findall("\n".join(block))
        want = [m.groups() for m in map(_FIELD_RE.match, (x.strip() for x in block)) if m]
        assert got == want, block
