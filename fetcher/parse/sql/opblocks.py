"""The per-operator blocks below a plan text's tree (:mod:`fetcher.parse.sql.plantext`): a head
``(15) SortMergeJoin [codegen id : 5]`` and ``Key: value`` field lines, a value possibly continued
on the lines below its own.

A block's fields are read when first asked for (:attr:`OpDetail.fields`): most blocks are of
operators no graph node is matched to (an initial plan, the query stages), and reading their lines
was most of the cost of a plan text.
"""

from __future__ import annotations

import re

#: A detail value kept per operator field; longer ones (a 500-column Output) are cut.
FIELD_KEEP_CHARS = 4000

_DETAIL_HEAD_RE = re.compile(r"^\((\d+)\)\s+(.*?)\s*(?:\[codegen id\s*:\s*(\d+)\])?\s*$")
# a key ends on a letter (its trailing blanks go to the separator), read greedily; a key has at
# most 40 characters (a longer "key" is text of the field before)
_FIELD_RE = re.compile(r"^([A-Z](?:[A-Za-z ]{0,38}[A-Za-z])?)(?:\s*\[\d+\])?\s*:\s?(.*)$")
# The same on each line of a block (re.M; blanks are [^\S\n], so that no match runs past its line),
# with the blanks around the line left out as line.strip() leaves them out.
_B = r"[^\S\n]"
# (Its optional groups are written as ``(?:x|)``, which matches as ``(?:x)?`` does, and the runs
# that nothing after them could take back from are possessive (``++``): the regex engine's general
# repeat, which a ``?`` after a group takes, is several times slower per line.)
_FIELD_LINES_RE = re.compile(
    rf"^{_B}*+([A-Z](?:[A-Za-z ]{{0,38}}[A-Za-z]|))(?:{_B}*+\[\d++\]|){_B}*+:{_B}?(?:(.*\S)|){_B}*$",
    re.M,
)
_CODEGEN_RE = re.compile(r"\[codegen id\s*:\s*(\d+)\]")
#: A line below a block's head that may start with "(" once stripped (as a head does).
LINE_PAREN_RE = re.compile(r"\n\s*\(")


class OpDetail:
    """One ``(n) Name [codegen id : k]`` block: its ``Key: value`` lines (``Output [2]:`` -> ``Output``).

    ``block``: the text of a block of this operator's head and field lines alone (no line in it
    starts another block or section), whose lines are read when ``fields`` is first asked for.
    """

    __slots__ = ("op_id", "name", "codegen_id", "_fields", "_block")

    def __init__(
        self,
        op_id: int,
        name: str,
        codegen_id: int | None,
        fields: dict[str, str] | None = None,
        block: str | None = None,
    ) -> None:
        self.op_id, self.name, self.codegen_id = op_id, name, codegen_id
        self._fields = {} if fields is None else fields
        self._block = block

    @property
    def fields(self) -> dict[str, str]:
        """The value of each field line, by key."""
        if self._block is not None:
            self._fields, self._block = _read_fields(self._block), None
        return self._fields

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OpDetail) or other.__class__ is not self.__class__:
            return NotImplemented
        mine = (self.op_id, self.name, self.codegen_id, self.fields)
        return mine == (other.op_id, other.name, other.codegen_id, other.fields)

    __hash__ = None  # type: ignore[assignment]  # (mutable: compared by value, not hashed)

    def __repr__(self) -> str:
        return (
            f"OpDetail(op_id={self.op_id!r}, name={self.name!r}, "
            f"codegen_id={self.codegen_id!r}, fields={self.fields!r})"
        )


def _read_fields(block: str) -> dict[str, str]:
    """The fields of a block of one operator's head and field lines: read by one regular
    expression when every line is a field (no continued value) short enough to be kept whole,
    else line by line, as :func:`fetcher.parse.sql.plantext._read_block` reads them."""
    head, _, body = block.partition("\n")
    pairs = _FIELD_LINES_RE.findall(body) if body else []
    if len(block) <= FIELD_KEEP_CHARS and len(pairs) == (body.count("\n") + 1 if body else 0):
        return dict(pairs)
    fields: dict[str, str] = {}
    last_field: str | None = None
    for line in body.split("\n") if body else ():
        stripped = line.strip()
        if not stripped:
            break  # an empty line ends the operator's lines (none below starts another block)
        last_field = read_field(fields, stripped, last_field)
    return fields


def read_field(fields: dict[str, str], stripped: str, last_field: str | None) -> str | None:
    """Read one stripped line into ``fields``: a field, or the continued value of the field
    before; returns the field the line belongs to."""
    fm = _FIELD_RE.match(stripped)
    if fm:  # (a key of over 40 characters does not match: the line continues the field)
        last_field, value = fm.groups()
        fields[last_field] = value[:FIELD_KEEP_CHARS]
    elif last_field is not None:
        joined = fields[last_field] + "\n" + stripped
        fields[last_field] = joined[:FIELD_KEEP_CHARS]
    return last_field


def _detail_head(line: str) -> tuple[int, str, int | None] | None:
    """(id, name, codegen id) of a line ``(n) Name [codegen id : k]`` that holds no newline: what
    :data:`_DETAIL_HEAD_RE` matches, read with str methods (its lazy name costs a try at every
    character of the name)."""
    close = line.find(")")
    digits = line[1:close]
    if line[:1] != "(" or not digits.isdecimal():  # (isdecimal: what \d is in a str pattern)
        return None
    rest = line[close + 1 :]
    if not rest[:1].isspace():
        return None
    name = rest.strip()
    # the codegen id is the last bracket, and only when it ends the line
    if name.endswith("]"):
        bracket = name.rfind("[")
        m = _CODEGEN_RE.fullmatch(name, bracket)
        if m is not None:
            return int(digits), name[:bracket].rstrip(), int(m.group(1))
    return int(digits), name, None
