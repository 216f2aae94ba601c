"""Messages built from the plain inputs of :mod:`sparkscope.notify.events`.

Each input becomes a :class:`Doc` (plain text throughout: subject, one-line intro, facts, sections,
links), which :mod:`sparkscope.notify.render` turns into an e-mail or Slack blocks, escaping every
value for its format. The webhook payload is structured data instead
(:mod:`sparkscope.notify.payload`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from sparkscope.notify.events import AlertEvent, Digest, Envelope, FoldedAlerts, Link
from sparkscope.notify.text import fmt_change, one_line
from sparkscope.present.display import fmt_duration_ms, fmt_hours, fmt_money, severity_name


@dataclass(frozen=True)
class DocEntry:
    """One item of a section's list, with an optional link."""

    text: str
    link: Link | None = None


@dataclass(frozen=True)
class Section:
    """A titled part of a message: paragraphs and a list."""

    title: str
    paragraphs: tuple[str, ...] = ()
    entries: tuple[DocEntry, ...] = ()


@dataclass(frozen=True)
class Doc:
    """A message in plain text, before any format escapes it."""

    subject: str
    intro: str
    severity: int | None
    facts: tuple[tuple[str, str], ...] = ()
    sections: tuple[Section, ...] = ()
    links: tuple[Link, ...] = ()


def _cost(core_hours: float | None, money: float | None, currency: str) -> str:
    text = f"{fmt_hours(core_hours)} core-hours"
    return text if money is None else f"{text} ({fmt_money(money, currency)})"


def _intro(e: AlertEvent, reason: str | None) -> str:
    name = one_line(e.app_name, 120)
    sev = severity_name(e.severity)
    text = {
        "finding": f"New {sev} finding{f' of {e.heuristic}' if e.heuristic else ''} on {name}.",
        "regression": f"{name} ran slower than its history predicts (regression).",
        "failure": f"{name} failed.",
        "cost_spike": f"{name} cost more than its recent runs.",
        "deadline": (
            f"The next run of {name} is forecast past its deadline."
            if e.forecast
            else f"{name} ran past its deadline."
        ),
    }[e.kind]
    return f"{text} {one_line(reason, 300)}" if reason else text


def conf_text(settings: tuple[tuple[str, str], ...], limit: int = 600) -> str:
    """Suggested settings as ``spark-submit`` options: ``--conf k=v --conf k2=v2``."""
    return one_line(" ".join(f"--conf {k}={v}" for k, v in settings), limit)


def alert_doc(e: AlertEvent, rule: str | None = None, reason: str | None = None) -> Doc:
    """What happened, how bad, what it cost, the cause, the fix, and links."""
    facts = [
        ("Application", one_line(e.app_name, 200)),
        ("App id", one_line(e.app_id, 200)),
        ("User", one_line(e.user)),
        ("Queue", one_line(e.queue)),
        ("Server", one_line(e.server)),
        ("Severity", severity_name(e.severity)),
    ]
    if e.heuristic:
        facts.append(("Heuristic", one_line(e.heuristic)))
    facts.append(("Cost", _cost(e.cost_core_hours, e.cost_money, e.currency)))
    facts.append(("Wall time", fmt_duration_ms(e.wall_ms)))
    if e.kind == "cost_spike" and e.baseline_core_hours is not None:
        change = fmt_change(e.cost_core_hours, e.baseline_core_hours)
        facts.append(("Recent median", f"{fmt_hours(e.baseline_core_hours)} core-hours ({change})"))
    if e.kind == "deadline" and e.duration_ms is not None:
        label = "Forecast duration" if e.forecast else "Duration"
        facts.append((label, fmt_duration_ms(e.duration_ms)))
    if rule:
        facts.append(("Rule", rule))
    sections = [Section("What", (one_line(e.title, 500),))]
    sections.append(Section("Cause", (one_line(e.cause, 1500),)))
    fix = [one_line(e.fix, 1500)]
    if e.settings:
        fix.append("Settings for the next run: " + conf_text(e.settings))
    sections.append(Section("Fix", tuple(fix)))
    subject = f"[{severity_name(e.severity)}] {one_line(e.title, 120)} — {one_line(e.app_name, 80)}"
    return Doc(subject, _intro(e, reason), e.severity, tuple(facts), tuple(sections), e.links)


def _alert_entry(e: AlertEvent) -> DocEntry:
    who = f" ({one_line(e.user, 60)})" if e.user else ""
    text = (
        f"[{severity_name(e.severity)}] {one_line(e.app_name, 100)}{who}: {one_line(e.title, 200)}"
    )
    return DocEntry(text, e.links[0] if e.links else None)


def _hhmm(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def folded_doc(f: FoldedAlerts) -> Doc:
    """A burst of one rule's alerts: the count, by severity, and the worst in full."""
    worst = max((lvl for lvl, n in f.by_severity.items() if n), default=None)
    window = f"{_hhmm(f.window_start)} – {f.window_end.astimezone(dt.UTC):%H:%M} UTC"
    intro = (
        f"Rule {f.rule} raised {f.count} more alerts in {window}, over its limit of "
        f"{f.max_per_hour} an hour; they are folded into this message."
    )
    facts = tuple(
        (severity_name(lvl).capitalize(), str(f.by_severity[lvl]))
        for lvl in sorted(f.by_severity, reverse=True)
        if f.by_severity[lvl]
    )
    sections = (Section(f"Worst {len(f.top)}", entries=tuple(_alert_entry(e) for e in f.top)),)
    subject = f"[{severity_name(worst)}] {f.count} alerts of rule {f.rule} folded ({window})"
    return Doc(subject, intro, worst, facts, sections)


def _local(t: dt.datetime, tz: str) -> str:
    return t.astimezone(ZoneInfo(tz)).strftime("%a %Y-%m-%d %H:%M")


def _against(fmt: Callable[[float | None], str], now: float | None, before: float | None) -> str:
    """A period's figure against the period before's: ``12.50 (+20.5% vs 10.37 the period
    before)``."""
    if before is None:
        return f"{fmt(now)} (none the period before)"
    return f"{fmt(now)} ({fmt_change(now, before)} vs {fmt(before)} the period before)"


def _more(shown: int, total: int) -> tuple[str, ...]:
    if total == 0:
        return ("None.",)
    return (f"The first {shown} of {total}.",) if shown < total else ()


def digest_doc(d: Digest) -> Doc:
    """Severity counts, worst applications with their top fix, regressions with causes,
    failures with their root-cause line, cost against the previous period, links."""
    scope = one_line(d.scope_text, 120)
    period = (
        f"{_local(d.period_start, d.timezone)} – {_local(d.period_end, d.timezone)} ({d.timezone})"
    )
    counts = [(lvl, d.counts.get(lvl, 0)) for lvl in (4, 3, 2, 1)]
    worst_level = next((lvl for lvl, n in counts if n), None)
    facts = [("Applications", str(d.apps_total))]
    facts += [(severity_name(lvl).capitalize(), str(n)) for lvl, n in counts]
    facts.append(("Core-hours", _against(fmt_hours, d.core_hours, d.previous_core_hours)))
    if d.money is not None:
        money = _against(lambda v: fmt_money(v, d.currency), d.money, d.previous_money)
        facts.append(("Cost", money))
    n_regressions = max(d.regressions_total, len(d.regressions))
    n_failures = max(d.failures_total, len(d.failures))
    facts += [("Regressions", str(n_regressions)), ("Failed", str(n_failures))]
    worst = tuple(
        DocEntry(
            f"{one_line(a.name, 100)} [{severity_name(a.severity)}]: "
            f"{fmt_hours(a.impact_core_hours)} core-hours, {fmt_duration_ms(a.impact_wall_ms)}"
            + (f" — fix: {one_line(a.top_fix, 300)}" if a.top_fix else "")
            + (f" ({conf_text(a.settings, 300)})" if a.settings else ""),
            Link("open", a.url) if a.url else None,
        )
        for a in d.worst
    )
    regressions = tuple(
        DocEntry(
            f"{one_line(r.name, 100)}: {fmt_duration_ms(r.duration_ms)}, expected "
            f"{fmt_duration_ms(r.expected_ms)}"
            + (f" — causes: {one_line('; '.join(r.causes), 300)}" if r.causes else ""),
            Link("open", r.url) if r.url else None,
        )
        for r in d.regressions
    )
    failures = tuple(
        DocEntry(
            f"{one_line(x.name, 100)}{f' ({one_line(x.user, 60)})' if x.user else ''}: "
            f"{one_line(x.root_cause, 300)}",
            Link("open", x.url) if x.url else None,
        )
        for x in d.failures
    )
    sections = (
        Section("Worst applications by impact", _more(len(worst), len(worst)), worst),
        Section("Regressions", _more(len(regressions), n_regressions), regressions),
        Section("Failures", _more(len(failures), n_failures), failures),
    )
    tally = ", ".join(f"{n} {severity_name(lvl)}" for lvl, n in counts[:2])
    subject = f"{d.name} digest for {scope}: {tally}, {n_failures} failed"
    intro = f"{d.apps_total} applications in {scope}, {period}."
    return Doc(subject, intro, worst_level, tuple(facts), sections, d.links)


def document(env: Envelope) -> Doc:
    """The document of one outbox message."""
    body = env.body
    if isinstance(body, AlertEvent):
        return alert_doc(body, env.rule, env.reason)
    if isinstance(body, FoldedAlerts):
        return folded_doc(body)
    return digest_doc(body)
