"""What every `sparkscope` subcommand shares: the lazily loaded config and one-line usage errors.

Command modules (sparkscope.cli, fetcher.cli, ...) import this module; it imports none of them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import update_wrapper
from typing import Any, TypeVar

import click

from sparkscope.config import Config, ConfigError, load_config

EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3

F = TypeVar("F", bound=Callable[..., Any])


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


def fail_usage(message: str) -> None:
    """Print one line to stderr and exit with the usage/config code."""
    click.echo(f"sparkscope: {message}", err=True)
    sys.exit(EXIT_USAGE)


def pass_config(f: F) -> F:
    """Decorator: pass the loaded Config as the first argument; config errors exit 2 in one line."""

    @click.pass_context
    def wrapper(ctx: click.Context, *args: Any, **kwargs: Any) -> Any:
        state = ctx.find_object(CliState)
        assert state is not None
        try:
            config = state.config
        except ConfigError as exc:
            fail_usage(f"config error: {exc}")
        return ctx.invoke(f, config, *args, **kwargs)

    return update_wrapper(wrapper, f)  # type: ignore[return-value]


def safe_url(url: str) -> str:
    """A database URL with its password hidden, for messages."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
