"""A :class:`sparkscope.notify.messages.Doc` as an e-mail (plain text + HTML) or as Slack blocks.

Every interpolated value is escaped for its format here, and only here: ``html_text`` for HTML
(quotes included, so values are safe in attributes too), ``slack_text`` for Slack mrkdwn. Links
pass :func:`sparkscope.notify.text.safe_url` (http(s) only) or are left out.
"""

from __future__ import annotations

import datetime as dt
import email.policy
from collections.abc import Sequence
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Any

from sparkscope.notify.events import Link
from sparkscope.notify.messages import Doc, DocEntry
from sparkscope.notify.text import html_text, one_line, safe_url, severity_color, slack_text

SLACK_TEXT_LIMIT = 3000  # a section's text
SLACK_HEADER_LIMIT = 150
SLACK_FIELDS = 10  # fields per section
SLACK_BLOCKS = 50


# ------------------------------------------------------------------------------------- e-mail


def plain_text(doc: Doc) -> str:
    """The text/plain part."""
    lines = [doc.subject, "=" * min(len(doc.subject), 72), "", doc.intro, ""]
    width = max((len(label) for label, _ in doc.facts), default=0)
    lines += [f"{label + ':':<{width + 1}} {value}" for label, value in doc.facts]
    for s in doc.sections:
        lines += ["", s.title, "-" * len(s.title), *s.paragraphs]
        for e in s.entries:
            url = safe_url(e.link.url) if e.link else None
            lines.append(f"* {e.text}" + (f"\n  {url}" if url else ""))
    links = [(x.label, u) for x in doc.links if (u := safe_url(x.url))]
    if links:
        lines += ["", "Links", "-----", *(f"{label}: {url}" for label, url in links)]
    return "\n".join(lines) + "\n"


def _a(link: Link | None) -> str:
    url = safe_url(link.url) if link else None
    if link is None or url is None:
        return ""
    return f'<a href="{html_text(url)}">{html_text(link.label)}</a>'


def _li(e: DocEntry) -> str:
    link = _a(e.link)
    return f"<li>{html_text(e.text)}{' ' + link if link else ''}</li>"


def html_body(doc: Doc) -> str:
    """The text/html part: every value escaped, links http(s) only."""
    color = severity_color(doc.severity)
    rows = "".join(
        f'<tr><th align="left" style="padding:2px 12px 2px 0">{html_text(label)}</th>'
        f"<td>{html_text(value)}</td></tr>"
        for label, value in doc.facts
    )
    parts = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8">',
        f"<title>{html_text(doc.subject)}</title></head>",
        '<body style="font-family:sans-serif;font-size:14px">',
        f'<div style="border-left:6px solid {color};padding-left:12px">',
        f'<h2 style="margin:0 0 8px">{html_text(doc.subject)}</h2>',
        f"<p>{html_text(doc.intro)}</p>",
        f"<table>{rows}</table>",
    ]
    for s in doc.sections:
        parts.append(f'<h3 style="margin:16px 0 4px">{html_text(s.title)}</h3>')
        parts += [f"<p>{html_text(p)}</p>" for p in s.paragraphs]
        if s.entries:
            parts.append("<ul>" + "".join(_li(e) for e in s.entries) + "</ul>")
    links = [a for x in doc.links if (a := _a(x))]
    if links:
        parts.append(f"<p>{' · '.join(links)}</p>")
    parts.append("</div></body></html>")
    return "\n".join(parts) + "\n"


def email_message(
    doc: Doc, *, from_addr: str, to: Sequence[str], event_id: str, date: dt.datetime
) -> EmailMessage:
    """multipart/alternative: text/plain first, text/html preferred; headers one line each."""
    msg = EmailMessage(policy=email.policy.SMTP)
    msg["Subject"] = one_line(doc.subject, 200)
    msg["From"] = from_addr
    msg["To"] = ", ".join(to)
    msg["Date"] = format_datetime(date.astimezone(dt.UTC))
    domain = from_addr.rpartition("@")[2].strip(">").strip() or "sparkscope.invalid"
    # The same Message-ID on a duplicate after a killed run lets mail systems drop it.
    msg["Message-ID"] = f"<{event_id}@{domain}>"
    msg["X-Sparkscope-Event-Id"] = event_id
    msg["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation auto-replies
    msg.set_content(plain_text(doc), cte="quoted-printable")
    msg.add_alternative(html_body(doc), subtype="html", cte="quoted-printable")
    return msg


# -------------------------------------------------------------------------------------- Slack


def _slack_url(url: str | None) -> str | None:
    safe = safe_url(url)
    if safe is None:
        return None
    # |, < and > would end the link; & is written &amp; like in all mrkdwn (Slack decodes it)
    return slack_text(safe.replace("|", "%7C").replace("<", "%3C").replace(">", "%3E"))


def _slack_link(link: Link | None) -> str:
    url = _slack_url(link.url) if link else None
    if link is None or url is None:
        return ""
    return f"<{url}|{slack_text(link.label.replace('|', '/'))}>"


def _fit(raw: str, limit: int) -> str:
    """Escaped text no longer than ``limit``, cut before escaping (never inside an entity)."""
    text = slack_text(raw)
    while len(text) > limit:
        raw = raw[: max(0, len(raw) * limit // len(text) - 2)]
        text = slack_text(raw + "…")
    return text


def _mrkdwn(text: str) -> dict[str, str]:
    return {"type": "mrkdwn", "text": text}


def _section_text(title: str, lines: list[str]) -> str:
    head = f"*{slack_text(title)}*"
    kept: list[str] = []
    size = len(head)
    for i, line in enumerate(lines):
        more = f"…and {len(lines) - i} more"
        if size + 1 + len(line) > SLACK_TEXT_LIMIT - len(more) - 1:
            kept.append(more)
            break
        kept.append(line)
        size += 1 + len(line)
    return "\n".join([head, *kept])


def slack_payload(doc: Doc) -> dict[str, Any]:
    """Incoming-webhook JSON: a fallback ``text`` and Block Kit ``blocks``."""
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {
                "type": "plain_text",
                "text": one_line(doc.subject, SLACK_HEADER_LIMIT),
                "emoji": False,
            },
        },
        {"type": "section", "text": _mrkdwn(_fit(doc.intro, SLACK_TEXT_LIMIT))},
    ]
    fields = [_mrkdwn(f"*{slack_text(k)}*\n{_fit(v, 1900)}") for k, v in doc.facts]
    for i in range(0, len(fields), SLACK_FIELDS):
        blocks.append({"type": "section", "fields": fields[i : i + SLACK_FIELDS]})
    for s in doc.sections:
        lines = [_fit(p, 2800) for p in s.paragraphs]
        for e in s.entries:
            link = _slack_link(e.link)
            lines.append(f"• {_fit(e.text, 2500)}{' ' + link if link else ''}")
        blocks.append({"type": "section", "text": _mrkdwn(_section_text(s.title, lines))})
    links = [x for link in doc.links if (x := _slack_link(link))]
    if links:
        blocks.append({"type": "context", "elements": [_mrkdwn(" · ".join(links))]})
    return {"text": _fit(doc.subject, 3000), "blocks": blocks[:SLACK_BLOCKS]}
