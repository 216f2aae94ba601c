"""Rows of one table written in bulk, those of several applications too: ``COPY`` on
PostgreSQL (a few rows: one ``INSERT``, one round trip instead of a COPY's two or more), a few
``INSERT`` statements of many rows each on SQLite; and the few other statements of a load
(an upsert returning ids, a look-up). All go to the driver's cursor directly, its errors raised as
SQLAlchemy raises them. On PostgreSQL the statements are written with psycopg's own ``$n``
placeholders (a raw cursor): psycopg then sends them as they are, where it would otherwise
parse the text of each statement of more than 50 parameters again on every execution.

The rows are the parser's dicts, keyed by column name; a key that a row lacks is the column's
default (NULL if it has none). JSON columns are serialised here with orjson, as the text the
column's JSON type would store: a ``None`` that is there is JSON ``null``, one that is missing
is SQL NULL, as an INSERT that leaves the column out would store. Each statement is built once
per dialect (and row count).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from itertools import chain, repeat
from operator import add, itemgetter
from typing import Any

import orjson
from sqlalchemy import JSON, Connection, Table, column, insert, table
from sqlalchemy.exc import DBAPIError

_MISSING = object()

# SQLite's driver binds an int, float or str as it is, and looks any other value up as an
# adapter; finding none, it asks its protocol type for ``__adapt__``, whose AttributeError
# (formatted, then dropped) costs more than the value's insert. None and bool are in most rows:
# registered, each is a dictionary hit and a C call (the ``get`` of an empty dict returns None for
# None; a bool is bound as its int either way), and the values stored are the same.
_NONE_TO_NONE: dict[None, None] = {}
sqlite3.register_adapter(type(None), _NONE_TO_NONE.get)
sqlite3.register_adapter(bool, int)


@dataclass(frozen=True)
class Layout:
    """How the rows of one table are written."""

    table: Table
    #: the columns after the leading one (``application_id``), as written
    names: tuple[str, ...]
    defaults: tuple[Any, ...]
    json: tuple[int, ...]  # indexes (in ``names``) of the JSON columns

    def values(self, groups: Iterable[tuple[Any, Sequence[Mapping[str, Any]]]]) -> list[Any]:
        """The values of every row of each group, one row after the other (a flat list: the
        statements take them so): the group's leading value (its application's id), then the
        row's columns."""
        names, json, width = self.names, self.json, self.width
        get = itemgetter(*names) if len(names) > 1 else lambda r: (r[names[0]],)
        out: list[Any] = []
        extend = out.extend
        missing = False  # a row lacked a column: its JSON columns may hold _MISSING
        for first, rows in groups:
            # Each row's values joined to the leading one and flattened, in C: no bytecode runs
            # per row (a row lacking a column is taken again below, with the columns' defaults).
            start = len(out)
            try:
                extend(chain.from_iterable(map(add, repeat((first,)), map(get, rows))))
            except KeyError:
                del out[start:]
                missing = True
                for row in rows:
                    out.append(first)
                    extend([row.get(n, d) for n, d in zip(names, self.defaults, strict=True)])
        # the JSON columns serialised a column at a time, over all the rows
        dumps, decode = orjson.dumps, bytes.decode
        for i in json:
            column = out[1 + i :: width]
            if missing:
                out[1 + i :: width] = [None if v is _MISSING else dumps(v).decode() for v in column]
            else:
                out[1 + i :: width] = list(map(decode, map(dumps, column)))
        return out

    @property
    def width(self) -> int:
        """Values per row: the leading one and the columns."""
        return 1 + len(self.names)


@cache
def layout(model_table: Table, leading: str = "application_id") -> Layout:
    """The layout of a table whose rows all start with ``leading``."""
    cols = [c for c in model_table.columns if c.name != leading]
    defaults = []
    for c in cols:
        if isinstance(c.type, JSON):
            defaults.append(_MISSING)
        elif c.default is not None and c.default.is_scalar:
            defaults.append(c.default.arg)  # type: ignore[attr-defined]
        else:
            defaults.append(None)
    return Layout(
        table=model_table,
        names=tuple(c.name for c in cols),
        defaults=tuple(defaults),
        json=tuple(i for i, c in enumerate(cols) if isinstance(c.type, JSON)),
    )


def write(
    conn: Connection, lay: Layout, groups: Sequence[tuple[Any, Sequence[Mapping[str, Any]]]]
) -> None:
    """Insert the rows of one application or several, each group of rows with its own leading
    value (its application's id), in the connection's transaction: in one statement on
    PostgreSQL, in a few statements of many rows each on SQLite."""
    values = lay.values(groups)
    if not values:
        return
    width = lay.width
    if conn.dialect.name == "postgresql":
        if len(values) < _COPY_ROWS * width:
            sql = _pg_insert_sql(conn, lay, len(values) // width)
            with _driver_cursor(conn, sql) as cur:
                cur.execute(sql, values)
            return
        sql = _copy_sql(conn, lay)
        with _driver_cursor(conn, sql) as cur, cur.copy(sql) as copy:
            types = _copy_types(values, width)
            if types is not None:
                copy.set_types(types)
            for at in range(0, len(values), width):
                copy.write_row(values[at : at + width])
        return
    # SQLite: an INSERT of many rows opens the table's and its indexes' cursors and ends its
    # statement once, where an executemany does so for each row. Each statement takes the most
    # rows that are a power of four (1, 4, 16, 64...) and fit its parameters, so that few
    # statements are ever built and prepared (the driver's statement cache keeps them).
    rows, done = len(values) // width, 0
    most = max(1, _SQLITE_MAX_PARAMETERS // width)
    while done < rows:
        n = 1 << ((min(rows - done, most).bit_length() - 1) & ~1)  # that power of four
        sql = _insert_sql(conn, lay, n)
        with _driver_cursor(conn, sql) as cur:
            cur.execute(sql, values[done * width : (done + n) * width])
        done += n


#: Rows from which PostgreSQL takes a COPY rather than an INSERT. A COPY costs a round trip
#: more and its fixed cost is half as much again as an INSERT's; its columns' types (below) make
#: each value cheaper than an INSERT's parameter, which wins the difference back from about this
#: many rows on (the types cost some dozens of values' look-ups: below it they would not pay).
_COPY_ROWS = 16

#: The PostgreSQL type, given to a COPY, whose dumper writes a value of each of these Python
#: types as the one psycopg finds for the value itself does (the same text; Int8Dumper writes
#: the digits of any int, as IntDumper's numeric dumper does beyond 64 bits).
_COPY_TYPES: dict[type, str] = {int: "int8", float: "float8", str: "text", bool: "bool"}


def _copy_types(values: list[Any], width: int) -> list[str] | None:
    """The types of a COPY's columns when each holds values of one Python type that
    :data:`_COPY_TYPES` has (and None): psycopg then dumps each value with its column's dumper,
    instead of looking one up for every value (most of its cost per value). None when a
    column holds anything else, or several types: each value is then dumped as it comes."""
    types = []
    for i in range(width):
        found = set(map(type, values[i::width]))
        found.discard(type(None))
        if len(found) > 1:
            return None
        name = _COPY_TYPES.get(found.pop()) if found else "text"
        if name is None:
            return None
        types.append(name)
    return types


#: Parameters of one SQLite statement at most: the lowest limit SQLite has had (999 before 3.32).
_SQLITE_MAX_PARAMETERS = 999


def upsert(
    conn: Connection,
    model_table: Table,
    keys: Sequence[str],
    rows: Sequence[Mapping[str, Any]],
    returning: Sequence[str],
) -> list[tuple[Any, ...]]:
    """Insert rows that all have the same columns, each replacing the stored row of its key
    (``keys``: a unique constraint's columns), in one statement; returns the ``returning``
    columns of every row written, in no particular order. JSON columns are serialised as
    :meth:`Layout.values` does (a ``None`` given is JSON ``null``)."""
    if not rows:
        return []
    columns = tuple(rows[0])
    json = [i for i, c in enumerate(columns) if isinstance(model_table.c[c].type, JSON)]
    params: list[Any] = []
    dumps = orjson.dumps
    for row in rows:
        values = [row[c] for c in columns]
        for i in json:
            values[i] = dumps(values[i]).decode()
        params.extend(values)
    sql = _upsert_sql(conn, model_table, tuple(keys), columns, len(rows), tuple(returning))
    with _driver_cursor(conn, sql) as cur:
        cur.execute(sql, params)
        return [tuple(r) for r in cur.fetchall()]


def insert_rows(
    conn: Connection, model_table: Table, columns: tuple[str, ...], values: list[Any], tail: str
) -> None:
    """Insert rows given as one flat list of values (each row's ``columns``, one row after the
    other), the statement ending with ``tail`` (an ``ON CONFLICT`` clause: SQL that both dialects
    read alike), in the connection's transaction: a few statements of many rows each, as
    :func:`write` makes on SQLite (a Core executemany costs more than the rows' own work)."""
    width = len(columns)
    rows, done = len(values) // width, 0
    pg = conn.dialect.name == "postgresql"
    most = max(1, (_PG_MAX_PARAMETERS if pg else _SQLITE_MAX_PARAMETERS) // width)
    while done < rows:
        # PostgreSQL: all the rows in one statement (one round trip) as far as its parameters
        # go; SQLite: a power of four rows, as write() takes (few statements to prepare)
        n = min(rows - done, most)
        if not pg:
            n = 1 << ((n.bit_length() - 1) & ~1)
        key = ("insert-tail", conn.dialect.name, model_table.name, columns, n, tail)
        sql = _SQL.get(key)
        if sql is None:
            quote = conn.dialect.identifier_preparer.quote
            sql = (
                f"INSERT INTO {quote(model_table.name)} ({', '.join(map(quote, columns))}) "
                f"VALUES {_rows_sql(pg, width, n)} {tail}"
            )
            if n <= _CACHED_ROWS or not pg:  # SQLite: a few powers of four
                _SQL[key] = sql
        with _driver_cursor(conn, sql) as cur:
            cur.execute(sql, values[done * width : (done + n) * width])
        done += n


def query(conn: Connection, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Run one statement written with ``?`` placeholders (each ``?`` one value of ``params``)
    on the driver's cursor; its rows (none for a statement that returns none)."""
    key = ("query", conn.dialect.name, sql)
    text = _SQL.get(key)
    if text is None:
        if conn.dialect.name == "postgresql":  # the n-th ``?`` is ``$n``
            parts = sql.split("?")
            text = parts[0] + "".join(f"${i}{p}" for i, p in enumerate(parts[1:], 1))
        else:
            text = sql
        _SQL[key] = text
    with _driver_cursor(conn, text) as cur:
        cur.execute(text, params)
        return [tuple(r) for r in cur.fetchall()] if cur.description else []


def marks(n: int) -> str:
    """``n`` placeholders for :func:`query`, comma-separated."""
    return ", ".join("?" * n)


def _upsert_sql(
    conn: Connection,
    model_table: Table,
    keys: tuple[str, ...],
    columns: tuple[str, ...],
    n: int,
    returning: tuple[str, ...],
) -> str:
    key = ("upsert", conn.dialect.name, model_table.name, keys, columns, n, returning)
    sql = _SQL.get(key)
    if sql is None:
        quote = conn.dialect.identifier_preparer.quote
        values = _rows_sql(conn.dialect.name == "postgresql", len(columns), n)
        updates = ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in columns if c not in keys)
        sql = _SQL[key] = (
            f"INSERT INTO {quote(model_table.name)} ({', '.join(map(quote, columns))}) "
            f"VALUES {values} "
            f"ON CONFLICT ({', '.join(map(quote, keys))}) DO UPDATE SET {updates} "
            f"RETURNING {', '.join(map(quote, returning))}"
        )
    return sql


@contextmanager
def _driver_cursor(conn: Connection, sql: str) -> Iterator[Any]:
    """A cursor of the driver's own connection (no SQLAlchemy context per statement), its errors
    raised as SQLAlchemy raises them for an INSERT."""
    dbapi = conn.connection.driver_connection
    assert dbapi is not None
    error = conn.dialect.loaded_dbapi.Error
    cursor = _raw_cursor()(dbapi) if conn.dialect.name == "postgresql" else dbapi.cursor()
    try:
        yield cursor
    except error as exc:
        raise DBAPIError.instance(sql, None, exc, error) from exc
    finally:
        cursor.close()


@cache
def _raw_cursor() -> Any:
    """psycopg's cursor of statements written with its ``$n`` placeholders."""
    from psycopg import RawCursor

    return RawCursor


#: (kind of statement, dialect, what it is built from...) -> its SQL
_SQL: dict[tuple[Any, ...], str] = {}
#: Rows of the largest statement of a varying number of rows that is kept once built.
_CACHED_ROWS = 64
#: Parameters of one PostgreSQL statement at most (the protocol counts them in 16 bits).
_PG_MAX_PARAMETERS = 65535


def _rows_sql(pg: bool, width: int, rows: int) -> str:
    """The placeholders of ``rows`` rows of ``width`` values: ``(?, ?), (?, ?)``, or on
    PostgreSQL ``($1, $2), ($3, $4)``."""
    if not pg:
        return ", ".join(["(" + ", ".join("?" * width) + ")"] * rows)
    marks = [f"${i}" for i in range(1, width * rows + 1)]
    return ", ".join(
        "(" + ", ".join(marks[at : at + width]) + ")" for at in range(0, len(marks), width)
    )


def _columns(conn: Connection, lay: Layout) -> str:
    quote = conn.dialect.identifier_preparer.quote
    columns = ", ".join(quote(c.name) for c in lay.table.columns if c.name not in lay.names)
    return columns + ", " + ", ".join(quote(n) for n in lay.names)


def _copy_sql(conn: Connection, lay: Layout) -> str:
    key = ("copy", conn.dialect.name, lay.table.name)
    sql = _SQL.get(key)
    if sql is None:
        quote = conn.dialect.identifier_preparer.quote
        sql = _SQL[key] = f"COPY {quote(lay.table.name)} ({_columns(conn, lay)}) FROM STDIN"
    return sql


def _pg_insert_sql(conn: Connection, lay: Layout, rows: int) -> str:
    """The INSERT of ``rows`` rows with psycopg's placeholders, the JSON columns taking their text
    (an untyped parameter, which PostgreSQL casts to the column's type as COPY does)."""
    key = ("insert-pg", lay.table.name, rows)
    sql = _SQL.get(key)
    if sql is None:
        quote = conn.dialect.identifier_preparer.quote
        sql = _SQL[key] = (
            f"INSERT INTO {quote(lay.table.name)} ({_columns(conn, lay)}) "
            f"VALUES {_rows_sql(True, lay.width, rows)}"
        )
    return sql


def _insert_sql(conn: Connection, lay: Layout, rows: int) -> str:
    """The INSERT of ``rows`` rows."""
    key = ("insert", conn.dialect.name, lay.table.name, rows)
    sql = _SQL.get(key)
    if sql is None:
        one = _insert_sql(conn, lay, 1) if rows > 1 else _compiled_insert(conn, lay)
        row = "(" + ", ".join(["?"] * lay.width) + ")"
        assert one.endswith(" VALUES " + row), one
        sql = _SQL[key] = one + (", " + row) * (rows - 1)
    return sql


def _compiled_insert(conn: Connection, lay: Layout) -> str:
    """The INSERT of one row that Core compiles for the table, its JSON columns taking the text
    as it is."""
    leading = [c.name for c in lay.table.columns if c.name not in lay.names]
    light = table(lay.table.name, *(column(n) for n in (*leading, *lay.names)))
    compiled = insert(light).compile(dialect=conn.dialect)
    positional = compiled.positiontup or []
    assert list(positional) == [*leading, *lay.names], positional
    return str(compiled)
