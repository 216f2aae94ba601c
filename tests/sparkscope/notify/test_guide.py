"""docs/notifications.md stays true: every key the notifications: section accepts and every field
of a real webhook payload (alert, folded burst, digest) is in it, its example configuration is
the one the parser accepts, and its signature snippet verifies a real signature."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import yaml

from sparkscope.config.notifications.section import documented_keys, parse_notifications
from sparkscope.notify.channels import sign
from sparkscope.notify.events import FoldedAlerts
from sparkscope.notify.payload import webhook_body, webhook_payload
from tests.sparkscope.notify.samples import T0, digest, envelope, finding

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "notifications.md"
TEXT = GUIDE.read_text()


def _paths(value: Any, prefix: str = "") -> set[str]:
    """Dotted paths of every key in a JSON value (list items share their list's path)."""
    out: set[str] = set()
    if isinstance(value, dict):
        for key, sub in value.items():
            path = f"{prefix}.{key}" if prefix else key
            out |= {path} | _paths(sub, path)
    elif isinstance(value, list):
        for item in value:
            out |= _paths(item, prefix)
    return out


def test_every_setting_of_the_section_is_documented() -> None:
    keys = documented_keys()
    assert "notifications.delivery.lease_s" in keys and len(keys) > 40
    assert [k for k in keys if f"`{k}`" not in TEXT] == []


def test_every_payload_field_is_documented() -> None:
    folded = FoldedAlerts(
        "etl-severe", T0.replace(minute=0), T0.replace(minute=0) + dt.timedelta(hours=1),
        20, 37, {4: 2, 3: 35}, (finding(),), ("a", "b"),
    )  # fmt: skip
    paths = set()
    for body in (finding(), folded, digest()):
        paths |= _paths(webhook_payload(envelope(body)))
    assert {
        "alert.cost.baseline_core_hours",
        "folded.top.title",
        "digest_report.worst.url",
    } <= paths
    missing = []
    for path in sorted(paths):
        parts = path.split(".")
        if parts[0] == "folded" and len(parts) > 2 and parts[1] == "top":
            continue  # each an `alert` object
        # a field is named as its full path, or, below the second level, by its own name
        if f"`{path}`" in TEXT or (len(parts) > 2 and f"`{parts[-1]}`" in TEXT):
            continue
        if len(parts) == 2 and re.search(rf"`{re.escape(path)}`|`{re.escape(path)}, ", TEXT):
            continue
        missing.append(path)
    assert missing == []


def test_the_example_is_a_valid_configuration() -> None:
    block = TEXT.split("```yaml\n", 1)[1].split("```", 1)[0]
    settings = parse_notifications(yaml.safe_load(block)["notifications"], file="guide")
    assert settings is not None
    assert [c.type for c in settings.channels] == ["email", "slack", "webhook"]
    assert settings.rules[0].max_per_hour == 20 and settings.digests[0].at == dt.time(7, 0)


def test_the_verification_snippet_accepts_our_signature_and_refuses_a_changed_body() -> None:
    snippet = TEXT.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict[str, Any] = {}
    exec(compile(snippet, "guide", "exec"), scope)  # noqa: S102 - our own documentation
    verify = scope["verify"]
    body = webhook_body(envelope())
    now = int(dt.datetime.now(dt.UTC).timestamp())
    headers = {"X-Sparkscope-Timestamp": str(now), "X-Sparkscope-Signature": sign("k", now, body)}
    assert verify("k", headers, body)
    assert not verify("other", headers, body)
    assert not verify("k", headers, body.replace(b"severe", b"low"))
    old = {**headers, "X-Sparkscope-Timestamp": str(now - 3600)}
    old["X-Sparkscope-Signature"] = sign("k", now - 3600, body)
    assert not verify("k", old, body)
