"""The heuristic contract: what the registry needs of a heuristic (:class:`Heuristic`), and the
usual form of one, a module of :mod:`heuristics.builtin` (or of a third-party distribution) with a
docstring and the module-level names ``NAME``, ``TITLE``, ``VERSION``, ``Params``, ``INPUTS`` and
``evaluate``, which :func:`from_module` checks and adapts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from heuristics.appdata import AppData
from heuristics.result import Outcome

P = TypeVar("P")

#: What ``INPUTS`` may name: the fields of :class:`AppData`.
INPUT_FIELDS = frozenset(f.name for f in dataclasses.fields(AppData))


@runtime_checkable
class Heuristic(Protocol[P]):
    """What the registry needs of a heuristic.

    ``version`` is part of the digest its stored results are keyed by: bump it when what the
    heuristic computes changes, and only its results are computed again.
    """

    @property
    def name(self) -> str:
        """Config key and stored name, e.g. ``stage_skew``."""
        ...

    @property
    def title(self) -> str:
        """Human title, e.g. "Stage skew"."""
        ...

    @property
    def version(self) -> int:
        """Version of what it computes (1, 2, ...)."""
        ...

    @property
    def params_type(self) -> type[P]:
        """A frozen dataclass whose fields have production defaults."""
        ...

    @property
    def inputs(self) -> frozenset[str]:
        """The fields of AppData it reads."""
        ...

    @property
    def doc(self) -> str:
        """User documentation: what it measures, why it matters, how to fix."""
        ...

    def evaluate(self, app: AppData, params: P) -> Outcome:
        """The finding on one application (pure: no I/O, clock or globals)."""
        ...


class ContractError(TypeError):
    """A module or object offered as a heuristic does not follow the contract."""


@dataclass(frozen=True)
class ModuleHeuristic:
    """A heuristic written as a module (NAME, TITLE, VERSION, Params, INPUTS, evaluate)."""

    name: str
    title: str
    version: int
    params_type: type[Any]
    inputs: frozenset[str]
    doc: str
    evaluate_fn: Callable[[AppData, Any], Outcome]
    module: ModuleType

    def evaluate(self, app: AppData, params: Any) -> Outcome:
        """Call the module's evaluate."""
        return self.evaluate_fn(app, params)


if TYPE_CHECKING:  # mypy checks here that the module adapter follows the contract

    def _follows_contract(adapter: ModuleHeuristic) -> Heuristic[Any]:
        return adapter


def from_module(module: ModuleType) -> ModuleHeuristic:
    """Check a module against the contract and adapt it; raise ContractError naming what is wrong."""
    where = module.__name__

    def need(attr: str, ok: Callable[[Any], bool], what: str) -> Any:
        value = getattr(module, attr, None)
        if not ok(value):
            raise ContractError(f"heuristic module {where}: {attr} must be {what}, got {value!r}")
        return value

    name = need("NAME", lambda v: isinstance(v, str) and v.isidentifier(), "an identifier")
    title = need("TITLE", lambda v: isinstance(v, str) and bool(v), "a non-empty string")
    version = need(
        "VERSION",
        lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
        "an integer >= 1",
    )
    params_type = need("Params", dataclasses.is_dataclass, "a dataclass")
    inputs = need(
        "INPUTS",
        lambda v: isinstance(v, frozenset) and bool(v) and v <= INPUT_FIELDS,
        f"a non-empty frozenset of AppData fields ({', '.join(sorted(INPUT_FIELDS))})",
    )
    evaluate = need("evaluate", callable, "a function (app, params) -> Outcome")
    doc = (module.__doc__ or "").strip()
    if not doc:
        raise ContractError(f"heuristic module {where}: needs a docstring (its help page)")
    try:
        params_type()
    except TypeError as exc:
        raise ContractError(f"heuristic module {where}: Params needs defaults: {exc}") from None
    return ModuleHeuristic(name, title, version, params_type, inputs, doc, evaluate, module)


def as_heuristic(obj: object) -> Heuristic[Any]:
    """A heuristic from a module or an object that already satisfies the contract."""
    if isinstance(obj, ModuleType):
        return from_module(obj)
    if isinstance(obj, Heuristic):
        return obj
    raise ContractError(f"{obj!r} is neither a heuristic module nor a Heuristic")
