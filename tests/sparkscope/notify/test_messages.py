from __future__ import annotations

import datetime as dt
import json
import re
from email import message_from_bytes, policy
from email.message import EmailMessage

from sparkscope.notify.events import AlertEvent, Envelope, FoldedAlerts, from_json, to_json
from sparkscope.notify.messages import document
from sparkscope.notify.payload import webhook_body, webhook_payload
from sparkscope.notify.render import SLACK_TEXT_LIMIT, email_message, slack_payload
from tests.sparkscope.notify.samples import HOSTILE_NAME, T0, digest, envelope, finding, hostile

ALERT_TEXT = """\
[severe] Stage 12 skew: 14.2 min lost to stragglers — nightly_orders
====================================================================

New severe finding of stage_skew on nightly_orders.

Application: nightly_orders
App id:      application_1711_0042
User:        etl
Queue:       batch
Server:      prod
Severity:    severe
Heuristic:   stage_skew
Cost:        6.50 core-hours
Wall time:   14.2 min
Rule:        etl-severe

What
----
Stage 12 skew: 14.2 min lost to stragglers

Cause
-----
One key (customer_id=0) holds 38% of stage 12's shuffle input.

Fix
---
Salt the join key or enable spark.sql.adaptive.skewJoin.enabled.

Links
-----
Application: https://sparkscope.example.com/apps/application_1711_0042?server=prod
History: https://sparkscope.example.com/history?name=nightly_orders&server=prod
"""

DIGEST_TEXT = """\
morning digest for queue analytics: 1 critical, 2 severe, 1 failed
==================================================================

42 applications in queue analytics, Sat 2026-03-28 07:00 – Sun 2026-03-29 07:00 (Europe/Prague).

Applications: 42
Critical:     1
Severe:       2
Moderate:     5
Low:          9
Core-hours:   120.50 (+20.5% vs 100.00 the period before)
Regressions:  1
Failed:       1

Worst applications by impact
----------------------------
* daily_revenue [critical]: 12.25 core-hours, 25.0 min — fix: Raise spark.sql.shuffle.partitions to 800.
  https://sparkscope.example.com/apps/app-1?server=prod
* cohorts [severe]: 3.50 core-hours, 5.0 min
  https://sparkscope.example.com/apps/app-2?server=prod

Regressions
-----------
* daily_revenue: 2.0 h, expected 1.0 h — causes: input grew 80%; executors 20 -> 10
  https://sparkscope.example.com/apps/app-3

Failures
--------
* export_<x> (cy): java.lang.OutOfMemoryError: Java heap space
  https://sparkscope.example.com/apps/app-4

Links
-----
Dashboard: https://sparkscope.example.com/
"""


def mail(env: Envelope | None = None) -> EmailMessage:
    e = env or envelope()
    msg = email_message(
        document(e), from_addr="Sparkscope <sparkscope@example.com>",
        to=["data-eng@example.com", "ops@example.com"], event_id=e.event_id, date=T0,
    )  # fmt: skip
    parsed = message_from_bytes(msg.as_bytes(), policy=policy.default)  # as a mail client sees it
    assert isinstance(parsed, EmailMessage)
    return parsed


def parts(msg: EmailMessage) -> tuple[str, str]:
    text = msg.get_body(("plain",))
    html = msg.get_body(("html",))
    assert text is not None and html is not None
    # the wire has CRLF line ends (policy SMTP); a mail client shows lines
    return text.get_content().replace("\r\n", "\n"), html.get_content().replace("\r\n", "\n")


def test_alert_email_is_multipart_alternative_with_exact_text() -> None:
    msg = mail()
    assert msg.get_content_type() == "multipart/alternative"
    assert [p.get_content_type() for p in msg.iter_parts()] == ["text/plain", "text/html"]
    assert msg["Subject"] == "[severe] Stage 12 skew: 14.2 min lost to stragglers — nightly_orders"
    assert msg["To"] == "data-eng@example.com, ops@example.com"
    assert msg["Message-ID"] == "<0b7c4f0e-1111-5222-8333-444455556666@example.com>"
    assert msg["X-Sparkscope-Event-Id"] == "0b7c4f0e-1111-5222-8333-444455556666"
    assert msg["Auto-Submitted"] == "auto-generated"
    text, html = parts(msg)
    assert text == ALERT_TEXT
    assert (
        '<th align="left" style="padding:2px 12px 2px 0">Cost</th><td>6.50 core-hours</td>' in html
    )
    assert (
        '<a href="https://sparkscope.example.com/history?name=nightly_orders&amp;server=prod">'
        "History</a>"
    ) in html
    assert "border-left:6px solid #ef6c00" in html  # severe's colour, as on the pages


def test_hostile_values_are_escaped_in_html_and_links_are_http_only() -> None:
    msg = mail(envelope(hostile()))
    assert "\n" not in msg["Subject"] and "<script>" in msg["Subject"]  # plain text header
    text, html = parts(msg)
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "nightly_&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;co&#x27;" in html
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert "javascript:" not in html.replace("&#x27;javascript:alert(1)&#x27;", "")  # only as text
    assert "Evil" not in html and "Evil" not in text  # the javascript: link is dropped
    assert 'href="https://sparkscope.example.com/apps/app%22%3C1%3E?server=prod"' in html
    tags = set(re.findall(r"</?([a-z0-9]+)", html))
    assert tags <= {"html", "head", "meta", "title", "body", "div", "h2", "h3", "p", "table",
                    "tr", "th", "td", "ul", "li", "a"}  # fmt: skip


def test_a_crlf_in_a_name_cannot_add_a_header() -> None:
    msg = mail(envelope(finding(app_name="x\r\nBcc: victim@example.com", title="t\nX-Evil: 1")))
    assert msg["Bcc"] is None and msg["X-Evil"] is None
    assert msg["Subject"] == "[severe] t X-Evil: 1 — x Bcc: victim@example.com"


def test_digest_email_exact_text_and_escaped_html() -> None:
    msg = mail(envelope(digest(), rule=None, digest="morning", channel="data-eng-mail"))
    text, html = parts(msg)
    assert text == DIGEST_TEXT
    assert "export_&lt;x&gt; (cy): java.lang.OutOfMemoryError" in html
    assert "border-left:6px solid #c62828" in html  # the worst severity present: critical


def test_slack_alert_blocks_exact() -> None:
    assert slack_payload(document(envelope())) == {
        "text": "[severe] Stage 12 skew: 14.2 min lost to stragglers — nightly_orders",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "emoji": False,
             "text": "[severe] Stage 12 skew: 14.2 min lost to stragglers — nightly_orders"}},
            {"type": "section", "text": {"type": "mrkdwn",
             "text": "New severe finding of stage_skew on nightly_orders."}},
            {"type": "section", "fields": [
                {"type": "mrkdwn", "text": t} for t in (
                    "*Application*\nnightly_orders", "*App id*\napplication_1711_0042",
                    "*User*\netl", "*Queue*\nbatch", "*Server*\nprod", "*Severity*\nsevere",
                    "*Heuristic*\nstage_skew", "*Cost*\n6.50 core-hours", "*Wall time*\n14.2 min",
                    "*Rule*\netl-severe",
                )
            ]},
            {"type": "section", "text": {"type": "mrkdwn",
             "text": "*What*\nStage 12 skew: 14.2 min lost to stragglers"}},
            {"type": "section", "text": {"type": "mrkdwn",
             "text": "*Cause*\nOne key (customer_id=0) holds 38% of stage 12's shuffle input."}},
            {"type": "section", "text": {"type": "mrkdwn",
             "text": "*Fix*\nSalt the join key or enable spark.sql.adaptive.skewJoin.enabled."}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text":
             "<https://sparkscope.example.com/apps/application_1711_0042?server=prod|Application>"
             " · <https://sparkscope.example.com/history?name=nightly_orders&amp;server=prod|History>"}]},
        ],
    }  # fmt: skip


def _mrkdwn_texts(payload: dict) -> list[str]:
    out = [payload["text"]]
    for b in payload["blocks"]:
        if b["type"] == "section":
            out += [b["text"]["text"]] if "text" in b else [f["text"] for f in b["fields"]]
        if b["type"] == "context":
            out += [e["text"] for e in b["elements"]]
    return out


def test_slack_escapes_hostile_values_and_mentions() -> None:
    payload = slack_payload(document(envelope(hostile())))
    texts = _mrkdwn_texts(payload)
    joined = "\n".join(texts)
    assert (
        "*Application*\nnightly_&lt;script&gt;alert(\"x\")&lt;/script&gt; &amp; 'co' &lt;!channel&gt;"
        in texts
    )
    # Outside of our own <url|label> links, no < or > survives, so no mention or link injection.
    assert re.sub(r"<https://[^<>|\s]+\|[A-Za-z]+>", "", joined).count("<") == 0
    assert ">" not in re.sub(r"<https://[^<>|\s]+\|[A-Za-z]+>", "", joined)
    assert "javascript" not in payload["blocks"][-1]["elements"][0]["text"]
    assert "app%22%3C1%3E" in joined


def test_slack_limits_cut_without_breaking_entities() -> None:
    long = finding(cause="<&>" * 3000, app_name="n" * 500)
    payload = slack_payload(document(envelope(long)))
    header = payload["blocks"][0]["text"]["text"]
    assert len(header) <= 150
    for text in _mrkdwn_texts(payload):
        assert len(text) <= SLACK_TEXT_LIMIT
        assert not re.search(r"&(?!amp;|lt;|gt;)", text), "a cut entity"


def test_webhook_payload_documented_fields() -> None:
    payload = webhook_payload(envelope())
    assert list(payload) == ["version", "event_id", "type", "created_at", "channel", "rule",
                             "digest", "summary", "alert", "folded", "digest_report"]  # fmt: skip
    assert payload["version"] == 1 and payload["type"] == "alert"
    assert payload["event_id"] == "0b7c4f0e-1111-5222-8333-444455556666"
    alert = payload["alert"]
    assert alert["occurrence_id"] == finding().occurrence_id
    assert alert["application"] == {
        "app_id": "application_1711_0042", "attempt_id": None, "name": "nightly_orders",
        "user": "etl", "queue": "batch", "server": "prod", "recurring_key": "nightly_orders",
    }  # fmt: skip
    assert alert["cost"] == {"core_hours": 6.5, "wall_ms": 852000, "money": None,
                             "currency": None, "baseline_core_hours": None}  # fmt: skip
    assert alert["links"][1] == {
        "label": "History",
        "url": "https://sparkscope.example.com/history?name=nightly_orders&server=prod",
    }
    d = webhook_payload(envelope(digest(), rule=None, digest="morning"))
    assert d["type"] == "digest" and d["alert"] is None
    report = d["digest_report"]
    assert report["counts"] == {"low": 9, "moderate": 5, "severe": 2, "critical": 1}
    assert report["cost"]["change_pct"] == 20.5
    assert report["period"] == {"start": "2026-03-28T06:00:00Z", "end": "2026-03-29T05:00:00Z",
                                "timezone": "Europe/Prague"}  # fmt: skip
    assert report["failures"][0]["root_cause"] == "java.lang.OutOfMemoryError: Java heap space"


def test_webhook_body_is_the_payload_with_html_inert_escapes() -> None:
    env = envelope(hostile())
    body = webhook_body(env)
    assert json.loads(body) == webhook_payload(env)
    assert b"<" not in body and b">" not in body and b"\\u003cscript\\u003e" in body
    assert webhook_payload(env)["alert"]["links"] == [
        {
            "label": "Application",
            "url": "https://sparkscope.example.com/apps/app%22%3C1%3E?server=prod",
        }
    ]


def test_folded_message() -> None:
    top = tuple(finding(app_id=f"app-{i}", severity=4 - (i % 2)) for i in range(3))
    folded = FoldedAlerts("etl-severe", T0.replace(minute=0), T0.replace(minute=0) + dt.timedelta(hours=1),
                          20, 37, {4: 2, 3: 35}, top)  # fmt: skip
    doc = document(envelope(folded))
    assert (
        doc.subject
        == "[critical] 37 alerts of rule etl-severe folded (2026-03-28 23:00 UTC – 00:00 UTC)"
    )
    assert doc.intro == (
        "Rule etl-severe raised 37 more alerts in 2026-03-28 23:00 UTC – 00:00 UTC, over its "
        "limit of 20 an hour; they are folded into this message."
    )
    assert doc.facts == (("Critical", "2"), ("Severe", "35"))
    assert [e.text for e in doc.sections[0].entries][0] == (
        "[critical] nightly_orders (etl): Stage 12 skew: 14.2 min lost to stragglers"
    )
    assert webhook_payload(envelope(folded))["folded"]["count"] == 37


def test_trigger_kinds_have_their_own_intro() -> None:
    cases = {
        "regression": "nightly_orders ran slower than its history predicts (regression).",
        "failure": "nightly_orders failed.",
        "cost_spike": "nightly_orders cost more than its recent runs. 6.50 core-hours, 150% over",
        "deadline": "The next run of nightly_orders is forecast past its deadline.",
    }
    for kind, intro in cases.items():
        e = finding(kind=kind, heuristic=None, forecast=kind == "deadline", baseline_core_hours=2.6)
        reason = "6.50 core-hours, 150% over" if kind == "cost_spike" else None
        assert document(envelope(e, reason=reason)).intro.startswith(intro)
    doc = document(envelope(finding(kind="cost_spike", baseline_core_hours=2.6)))
    assert ("Recent median", "2.60 core-hours (+150.0%)") in doc.facts


def test_envelopes_round_trip_through_json() -> None:
    for env in (envelope(), envelope(hostile()), envelope(digest(), rule=None, digest="morning")):
        data = json.loads(json.dumps(to_json(env)))
        assert from_json(data) == env
    assert from_json(to_json(hostile())).app_name == HOSTILE_NAME
    assert isinstance(from_json(to_json(finding())), AlertEvent)
