"""Text rules shared by the message builders: one-line cuts, escaping for HTML and Slack, URLs
that may be linked, and the change of a figure against the one before.

Every text that comes from a job (names, users, titles, causes) stays plain text until a renderer
escapes it for its format (:mod:`sparkscope.notify.render`). Numbers and durations are written by
:mod:`sparkscope.present.display`, as on the pages.
"""

from __future__ import annotations

import html
import re
from urllib.parse import urlsplit

from sparkscope.present.display import MISSING, severity_style

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


def severity_color(level: int | None) -> str:
    """The colour of a severity, as the web UI's badges."""
    return severity_style(level).color


def one_line(text: str | None, limit: int = 200) -> str:
    """Control characters (CR/LF included) folded to a space, cut to ``limit`` with an ellipsis."""
    if text is None:
        return MISSING
    flat = _CONTROL.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def fmt_change(now: float | None, before: float | None) -> str:
    """``+12.5%`` against the previous value; ``new`` when there was none."""
    if now is None:
        return MISSING
    if before is None or before == 0:
        return "new" if now else "±0%"
    return f"{(now - before) / before * 100:+.1f}%"


def html_text(text: str | None) -> str:
    """Escaped for HTML element content and attribute values (quotes included)."""
    return html.escape(MISSING if text is None else text, quote=True)


def slack_text(text: str | None) -> str:
    """Escaped for Slack mrkdwn: only &, < and > (which also defeats <!channel> and <url|x>)."""
    s = MISSING if text is None else text
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def safe_url(url: str | None) -> str | None:
    """The URL if it is http(s) and free of spaces and control characters, else None."""
    if not url or _CONTROL.search(url) or " " in url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme in ("http", "https") and parts.netloc else None
