"""The key's own lines for one run, the default among them, and their extrapolation.

Three lines model a run's duration as its start-up plus a work it had to do: the I/O line and the
slot line (:class:`sparkscope.advisor.predict.baselines.LineFit`) and the work line
(:mod:`sparkscope.advisor.predict.workline`). The default is the I/O line, or the slot line when
its per-slot term is significant; the work line takes over as the default when its
leave-one-out error on the training runs (relative PRESS) is below the default's: the terms it
chose (iterations, tasks, a sub-linear size) predict runs it was not fitted on better.

Beyond the sizes the training runs covered, every line is continued from the edge of the range
(:mod:`sparkscope.advisor.predict.extrapolate`); the straight value is kept for the interval,
which spans both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkscope.advisor.predict import elasticity, extrapolate, rounds_prior, workline
from sparkscope.advisor.predict.baselines import LineFit
from sparkscope.advisor.predict.regimes import EXTRAPOLATION, Regime
from sparkscope.advisor.predict.selection import MIN_SCORED, SELECT_RUNS, SWITCH_ALPHA

IO_MODEL = "io_line"
SLOT_MODEL = "slot_line"
WORK_MODEL = "work_line"
LINE_MODELS = (IO_MODEL, SLOT_MODEL, WORK_MODEL)


@dataclass(frozen=True)
class Options:
    """Switches between the forms compared in docs/dev/models.md; the defaults are the adopted
    ones (``benchmarks.model_eval`` flips them to reproduce the figures)."""

    #: How the work line may become the default: "record" (its out-of-sample errors on the
    #: key's latest earlier runs past its first ones against the incumbent's; "nested" below
    #: ``MIN_SCORED`` such runs), "nested" (leave-one-out, its terms chosen again without the
    #: run left out), "press" (leave-one-out of the hat matrix, its terms as chosen on all the
    #: runs) or "". Whatever the rule, below four training runs the work line's slots prior
    #: serves (the incumbent is the median there), and below ``MIN_SCORED`` the PRESS decides.
    work_default: str = "record"
    #: How the served lines continue beyond the range of sizes: "" (straight), "local",
    #: "history", "mean" (of "history" and straight, in log space) or "split" (whichever of
    #: straight and "history" predicted the key's own larger half from its smaller one).
    continuation: str = ""
    #: The other form the interval spans beyond the range ("" none; "history", "local").
    envelope: str = "history"
    #: The conformal residuals are scaled by each run's difficulty (its leverage).
    normalise: bool = True
    #: Challengers are judged on the earlier runs of the same regime only.
    regime_select: bool = True
    #: The rounds' terms of the work line (``workline.ROUNDS_FORMS``). "prior": two or three runs
    #: whose iteration counts differ get a per-round line; the "first" part (the rounds' column
    #: entering a longer history's line first) won on the synthetic fleet it was written for but
    #: not on a second draw nor on the recorded corpus, so the simpler form is kept.
    rounds: str = "prior"
    #: A key with fewer than four runs is served by the class-aware model anchored on its own
    #: runs (``classaware.anchored``) instead of the class-aware model alone.
    anchored: bool = False
    #: A key of two or three runs whose work line has a first-principle term (its slots' or its
    #: rounds', see ``workline._few_runs``) is served by it rather than by the class-aware model.
    own_prior: bool = False
    #: A key with fewer than four runs is served by the class-aware model (plain or anchored);
    #: when False, by its own runs' default line as every other key (the class-aware model
    #: still competes as a challenger).
    class_serves_new: bool = False
    #: A key of one to three runs on one slot count, predicted on other slots, is served by its
    #: median work scaled by Amdahl's law with the parallel share of the server's other keys
    #: (``amdahl``), the interval spanning the spread of their shares: "" off, "slots" (the
    #: median work as it is), "size" (each run's work scaled to the run's size as well: tied on
    #: the synthetic fleets it was chosen on, lost on a second draw).
    amdahl: str = "slots"
    #: What the training runs' job timelines say a round costs (``rounds_prior.FORMS``): "one"
    #: serves it where the work line has no first-principle term (one earlier run, or runs whose
    #: counts do not differ); "few" and "mean" did no better on the synthetic fleets.
    rounds_timeline: str = "one"
    #: In that prior a round's cost grows with the size read (each round a pass over the data);
    #: False: a round costs what the training run's round did, at any size (real loops' rounds
    #: are mostly per-job overhead; held-out draws 1-5, docs/dev/models.md).
    rounds_timeline_sized: bool = False
    #: Beyond the range of sizes, the lines of a key whose own range is narrow continue with
    #: their variable part bent by the size elasticity of the server's other keys
    #: (``elasticity``), the interval spanning the spread and the straight value: "" off,
    #: "pooled", "own" (a key of a wide range with its own elasticity as well), "total" (the
    #: whole work at the edge times r^e). Each lost on the synthetic forward split it was
    #: measured on (docs/dev/models.md), so it stays off.
    elasticity: str = ""
    #: Beyond this many times the range (the regime's ratio; 0: never), the work line is the
    #: default whenever it has terms: the default rule's evidence (leave-one-out, the record)
    #: is of runs inside the range, and the work line is the line that extrapolates with
    #: restraint (terms the history supports, a sub-linear size exponent where it shows one).
    #: Challengers still compete on the runs of that regime. 2.0 (twice the range) by a rule
    #: written before its second held-out draw was made (docs/dev/models.md); 1.0 lost on
    #: recurring-events.
    outside_work: float = 2.0
    #: A key with too few out-of-sample residuals of its own for its interval adds the
    #: leave-one-out residuals of its training runs (``jackknife``): "" never, "before" (before
    #: borrowing the server's other keys': nearer the nominal on the synthetic fleets, over the
    #: band on the recorded corpora), "after" (only where the server's residuals are short too).
    jackknife: str = ""
    #: ... for runs outside the range too (their leave-one-out residuals are of runs inside it).
    jackknife_outside: bool = True
    #: Below the conformal rank (fewer residuals than an interval at the level needs) the
    #: interval is "student" the Student-t prediction interval on them (adopted by a rule
    #: written before its figures, docs/dev/models.md), "" the largest miss seen either way
    #: (it covers n/(n+1) of exchangeable residuals), or "student3" Student's t only below four
    #: residuals, where no distribution-free interval reaches 80%.
    small_sample: str = "student"


OPTIONS = Options()


@dataclass
class Lines:
    """The lines' predictions for one run, the incumbent default and the work line's terms."""

    predictions: dict[str, float] = field(default_factory=dict)
    #: The value of each line continued in the envelope's form (where it differs).
    alternative: dict[str, float] = field(default_factory=dict)
    incumbent: str = IO_MODEL
    work_terms: tuple[str, ...] = ()
    press: dict[str, float] = field(default_factory=dict)
    #: Other values of each line the interval spans (``Options.elasticity``).
    spread: dict[str, list[float]] = field(default_factory=dict)


def line_candidates(
    Xt: Any,
    yt: Any,
    x: Any,
    alpha: float,
    options: Options = OPTIONS,
    elastic: Callable[[], elasticity.Elasticity | None] | None = None,
) -> Lines:
    """The I/O, slot and work lines of the training runs ``Xt``, ``yt`` for the run ``x``
    (``elastic``: the server's size elasticity, asked for only where it is used)."""
    import numpy as np

    fit = LineFit(Xt, yt, alpha)
    work = workline.fit(Xt, yt, rounds=options.rounds)
    work = rounds_prior.serve(
        work, Xt, yt, options.rounds_timeline, sized=options.rounds_timeline_sized
    )
    evaluators = {
        IO_MODEL: lambda R: fit.at(R)[0],
        SLOT_MODEL: lambda R: fit.at(R)[1],
        WORK_MODEL: work.at,
    }
    out = Lines(incumbent=SLOT_MODEL if fit.slots_matter else IO_MODEL)
    out.work_terms = tuple(work.terms)
    out.press = {**fit.press, WORK_MODEL: work.press}
    mode = options.continuation
    if mode == "split":
        mode = _split_choice(Xt, yt, x, out.incumbent, alpha)
    X1 = np.atleast_2d(x)
    for name, f in evaluators.items():
        straight, value = continued(f, Xt, yt, X1, mode)
        out.predictions[name] = float(value[0])
        if options.envelope:
            _s, other = continued(f, Xt, yt, X1, options.envelope)
            if abs(float(other[0]) - float(value[0])) > 1e-9:
                out.alternative[name] = float(other[0])
    if options.elasticity and elastic is not None:
        exponent = float(getattr(work, "exponent", 1.0))  # the rounds' prior: linear per round
        bent = elasticity.bent(
            evaluators, out.predictions, exponent, Xt, yt, X1[0], options.elasticity, elastic
        )
        for name, (value, others) in bent.items():
            out.predictions[name] = value
            out.spread[name] = others
    return out


def default_line(
    lines: Lines,
    Xt: Any,
    yt: Any,
    recent: Sequence[Mapping[str, float]],
    options: Options,
    regime: Regime | None = None,
) -> str:
    """The default among the lines: the incumbent (I/O or slot line) unless the work line's
    terms predict runs it was not fitted on better (see ``Options.work_default``), or the run
    is beyond ``Options.outside_work`` times the range (``regime``) and the work line has terms."""
    inc = lines.incumbent
    if not options.work_default or not lines.work_terms:
        return inc
    if regime is not None and regime.kind == EXTRAPOLATION and options.outside_work:
        if regime.ratio > options.outside_work:  # the record is of runs inside the range
            return WORK_MODEL
    if len(yt) < workline.FIT_RUNS:  # the incumbent is the median there: the slots' prior
        return WORK_MODEL
    if options.work_default == "press" or len(yt) < MIN_SCORED:  # too few for a nested test
        return WORK_MODEL if lines.press[WORK_MODEL] < lines.press[inc] else inc
    if options.work_default == "record":
        # Runs the two predicted alike say nothing about which is better.
        both = [
            e for e in recent if inc in e and WORK_MODEL in e and abs(e[inc] - e[WORK_MODEL]) > 1e-9
        ][:SELECT_RUNS]
        if len(both) >= MIN_SCORED:
            work = sum(abs(e[WORK_MODEL]) for e in both)
            return WORK_MODEL if work < sum(abs(e[inc]) for e in both) else inc
    return WORK_MODEL if nested_loo(Xt, yt, WORK_MODEL) < nested_loo(Xt, yt, inc) else inc


def continued(f: Any, Xt: Any, yt: Any, rows: Any, mode: str) -> tuple[Any, Any]:
    """(straight, continued) values of the evaluator ``f`` (rows -> durations) of a line fitted
    on ``Xt``, ``yt`` at ``rows``: beyond the range of sizes the line continues from its edge
    (see extrapolate); inside it, or with ``mode`` "", both are the line's own."""
    import numpy as np

    straight = np.asarray(f(rows), dtype=float)
    value = straight.copy()
    if not mode:
        return straight, value
    floor = workline.FLOOR * float(yt.min())
    e_hist: float | None = None
    for j, x in enumerate(rows):
        ratio, c = extrapolate.size_ratio(Xt, x)
        if c is None or ratio == 1.0:
            continue
        start = float(x[extrapolate.STARTUP])
        edge = extrapolate.scaled(x, 1.0 / ratio)
        inward = extrapolate.STEP if ratio > 1 else -extrapolate.STEP
        w_edge, w_in = (np.asarray(f(np.array([edge, extrapolate.scaled(edge, 1.0 - inward)])))
                        - start)  # fmt: skip
        if w_edge <= 0:
            continue
        if mode == "local":
            if w_in <= 0:
                continue
            e: float | None = math.log(w_edge / w_in) / -math.log(1.0 - inward)
        else:
            if e_hist is None:
                e_hist = extrapolate.history_elasticity(Xt, yt, c)
            e = e_hist
        if e is None:
            continue
        v = max(start + w_edge * ratio ** min(max(e, 0.0), 1.0), floor)
        value[j] = math.sqrt(v * straight[j]) if mode == "mean" else v
    return straight, value


def _split_choice(Xt: Any, yt: Any, x: Any, name: str, alpha: float) -> str:
    """ "history" or "" (straight) for the run ``x`` outside the range: whichever predicted the
    key's own larger (or smaller) runs better from its smaller (larger) ones, the line ``name``
    fitted on the one half and scored on the other (ties: straight)."""
    import numpy as np

    ratio, c = extrapolate.size_ratio(Xt, x)
    n = len(yt)
    if c is None or ratio == 1.0 or n < 2 * FEW_FOR_SPLIT:
        return ""
    order = np.argsort(Xt[:, c], kind="stable")
    if ratio < 1:
        order = order[::-1]
    train, test = order[: (n + 1) // 2], order[(n + 1) // 2 :]
    Xa, ya = Xt[train], yt[train]
    f: Callable[[Any], Any]
    if name == WORK_MODEL:
        f = workline.fit(Xa, ya, rounds=OPTIONS.rounds).at
    else:
        half = LineFit(Xa, ya, alpha)
        pick = 1 if name == SLOT_MODEL else 0
        f = lambda R: half.at(R)[pick]  # noqa: E731
    straight, hist = continued(f, Xa, ya, Xt[test], "history")
    truth = yt[test]
    err_s = float(np.abs(np.log(truth / np.maximum(straight, 1e-9))).mean())
    err_h = float(np.abs(np.log(truth / np.maximum(hist, 1e-9))).mean())
    return "history" if err_h < err_s else ""


#: Runs a half needs for the split choice (the lines' own minimum).
FEW_FOR_SPLIT = 4


def nested_loo(Xt: Any, yt: Any, name: str) -> float:
    """The sum of squared relative leave-one-out errors of the line ``name`` over the latest
    ``SELECT_RUNS`` training runs, everything about it (its terms, exponent, the F-test) decided
    again without the run left out."""
    import numpy as np

    n = len(yt)
    total = 0.0
    for j in range(max(0, n - SELECT_RUNS), n):
        keep = np.arange(n) != j
        X, y = Xt[keep], yt[keep]
        if name == WORK_MODEL:
            v = float(workline.fit(X, y, rounds=OPTIONS.rounds).at(Xt[j])[0])
        else:
            io, slot = LineFit(X, y, SWITCH_ALPHA).at(Xt[j])
            v = float(slot[0] if name == SLOT_MODEL else io[0])
        total += ((v - yt[j]) / yt[j]) ** 2
    return total
