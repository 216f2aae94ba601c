"""What every `sparkscope` subcommand shares: the lazily loaded config, one-line usage errors, and
one-line database errors (unreachable, refused login, missing, not migrated or older than the code).

Command modules (sparkscope.cli.main, sparkscope.cli.fetch, ...) import this module; it imports none of them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import update_wrapper
from typing import Any, Literal, NoReturn, TypeVar, overload

import click

from sparkscope.config.loader import Config, load_config
from sparkscope.config.parsing import ConfigError
from sparkscope.db import safe_url

EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3

F = TypeVar("F", bound=Callable[..., Any])

#: What a command needs of the database before it runs:
#: "current" — reachable and migrated to this code's schema (the default);
#: "setup" — like "current" on PostgreSQL; on the embedded SQLite the command sets the file up itself;
#: "reachable" — only reachable (the `db` commands, which change or report the schema);
#: "none" — the command never opens the database (dump, schedule).
Database = Literal["current", "setup", "reachable", "none"]


class CliState:
    """What every subcommand shares: the config path and the config, loaded on first use."""

    def __init__(self, config_path: str | None) -> None:
        self.config_path = config_path
        self._config: Config | None = None

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(self.config_path)
        return self._config


def fail_usage(message: str) -> NoReturn:
    """Print one line to stderr and exit with the usage/config code."""
    click.echo(f"sparkscope: {message}", err=True)
    sys.exit(EXIT_USAGE)


@overload
def pass_config(f: F) -> F: ...
@overload
def pass_config(*, database: Database = "current") -> Callable[[F], F]: ...


def pass_config(f: F | None = None, *, database: Database = "current") -> Any:
    """Decorator: pass the loaded Config as the first argument.

    Config errors exit 2 in one line. So do database problems, checked before the command runs as
    ``database`` says, and raised while it runs: one line naming the database (password hidden)
    and the fix, never a traceback.
    """
    if f is None:
        return lambda g: _wrap(g, database)
    return _wrap(f, database)


def _wrap(command: F, database: Database) -> F:

    @click.pass_context
    def wrapper(ctx: click.Context, *args: Any, **kwargs: Any) -> Any:
        state = ctx.find_object(CliState)
        assert state is not None
        try:
            config = state.config
        except ConfigError as exc:
            fail_usage(f"config error: {exc}")
        if database == "none":
            return ctx.invoke(command, config, *args, **kwargs)
        _check_database(config.database_url, database)
        try:
            return ctx.invoke(command, config, *args, **kwargs)
        except Exception as exc:
            message = _database_error(config.database_url, exc)
            if message is None:
                raise
            fail_usage(message)

    return update_wrapper(wrapper, command)  # type: ignore[return-value]


def _check_database(url: str, need: Database) -> None:
    from sparkscope import migrate
    from sparkscope.db import sqlite_path

    if sqlite_path(url) is not None and need != "current":
        return  # `db upgrade` and `fetch` make (and migrate) the embedded SQLite file themselves
    # `fetch` migrates only the embedded SQLite database: elsewhere it needs the schema current
    problem = migrate.database_problem(url, schema=need != "reachable")
    if problem:
        fail_usage(problem)


def _database_error(url: str, exc: Exception) -> str | None:
    """The one-line message for a database problem met while a command ran, else None."""
    from alembic.util.exc import CommandError
    from sqlalchemy.exc import DBAPIError

    from sparkscope import migrate
    from sparkscope.db import DatabaseProblem, describe_error

    if isinstance(exc, CommandError):  # e.g. `db upgrade` on a database newer than the code
        return f"{safe_url(url)}: {exc}"
    if isinstance(exc, DatabaseProblem):
        return str(exc)
    if not isinstance(exc, DBAPIError):
        return None
    return describe_error(url, exc) or migrate.database_problem(url)
