"""Real headless Chromium on the Notifications page of the recorded corpora fetched with
notifications: the channels with their health (one failing, its error shown), the rules, the
mutes, the messages, a digest preview and a preview for a scope typed into the form; hostile text
(an application name, a mute's reason, the scope typed in) is shown as text and runs nothing; and
browsing the page changes nothing in the outbox."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select, update

from sparkscope.config.loader import parse_config
from sparkscope.db import make_engine, make_sessionmaker, now_ms
from sparkscope.models.analysis import AnalysisResult
from sparkscope.models.application import Application
from sparkscope.models.notify import NotifyOutbox
from sparkscope.notify import outbox
from sparkscope.notify.status import current_period
from sparkscope.web.app import create_app
from tests.sparkscope.notify.corpus import NOTIFICATIONS
from tests.sparkscope.notify.samples import HOSTILE_NAME
from tests.support.browser import SHOTS, chromium, new_page, served

pytestmark = pytest.mark.browser

REASON = "<img src=x onerror=\"document.title='pwned'\"> known & flaky"
ERROR = "HTTP 500 from http://127.0.0.1:9/…: <b>upstream</b> broke"


def _outbox(factory: Any) -> list[tuple[Any, ...]]:
    with factory() as session:
        return [tuple(r) for r in session.execute(select(NotifyOutbox.__table__)).all()]


def facts(page: Any) -> dict[str, str]:
    """The preview's facts table, label to value."""
    rows = page.locator("#digest-preview table tr")
    return {
        rows.nth(i).locator("th").inner_text(): rows.nth(i).locator("td").inner_text()
        for i in range(rows.count())
    }


@pytest.fixture
def page_db(corpus_url: str) -> Iterator[tuple[str, Any]]:
    """The corpus with its three costliest applications ended inside both previews' periods
    (halfway between the evening digest's latest boundary and now, so at any time of day), the
    costliest renamed to a hostile name, and the hook's newest attempt failed."""
    engine = make_engine(corpus_url)
    factory = make_sessionmaker(engine)
    now = now_ms()
    config = parse_config({"database_url": corpus_url, "notifications": NOTIFICATIONS}, env={})
    assert config.notifications is not None
    evening = config.notifications.digests[0]
    since = current_period(evening, dt.datetime.fromtimestamp(now / 1000, dt.UTC)).start
    ended = (int(since.timestamp() * 1000) + now) // 2
    with factory() as session, session.begin():
        costliest = list(
            session.scalars(
                select(AnalysisResult.application_id)
                .where(AnalysisResult.severity > 0)
                .group_by(AnalysisResult.application_id)
                .order_by(func.sum(AnalysisResult.impact_core_hours).desc(), AnalysisResult.application_id)
                .limit(3)
            )
        )  # fmt: skip
        session.execute(
            update(Application).where(Application.id.in_(costliest)).values(end_time_ms=ended)
        )
        session.execute(
            update(Application).where(Application.id == costliest[0]).values(name=HOSTILE_NAME)
        )
        hook = session.scalar(
            select(NotifyOutbox.id)
            .where(NotifyOutbox.channel == "hook")
            .order_by(NotifyOutbox.id)
            .limit(1)
        )
        session.execute(
            update(NotifyOutbox)
            .where(NotifyOutbox.id == hook)
            .values(state=outbox.FAILED, attempts=1, last_attempt_ms=now, last_error=ERROR)
        )
    yield corpus_url, factory
    engine.dispose()


@pytest.mark.parametrize("corpus_master", ["postgresql"], indirect=True)
def test_the_notifications_page_in_a_browser(page_db: tuple[str, Any]) -> None:
    url, factory = page_db
    raw = {**NOTIFICATIONS, "mutes": [{**NOTIFICATIONS["mutes"][0], "reason": REASON}]}
    config = parse_config({"database_url": url, "notifications": raw}, env={})
    app = create_app({"TESTING": True}, config=config)
    before = _outbox(factory)
    try:
        with served(app) as base, chromium() as browser:
            page, errors = new_page(browser, height=1400)
            page.goto(f"{base}/notifications")
            channels = page.locator("#channels tr.channel")
            assert channels.count() == 3
            hook = page.locator("#channels tr[data-channel='hook']")
            assert "failing" in (hook.get_attribute("class") or "")
            assert hook.locator(".badge").inner_text() == "failing"
            assert ERROR in hook.inner_text()  # as text: no <b> element made of it
            assert hook.locator("b").count() == 0
            for name in ("mail", "slack"):
                row = page.locator(f"#channels tr[data-channel='{name}']")
                assert row.locator(".badge").inner_text() == "ok"
            slack = page.locator("#channels tr[data-channel='slack']").inner_text()
            assert "$T_SLACK" in slack  # the variable's name, never a URL
            rules = page.locator("#rules tbody tr")
            assert [rules.nth(i).get_attribute("data-rule") for i in range(rules.count())] == [
                "severe", "failures", "daily-mail",
            ]  # fmt: skip
            assert "3 an hour, then one folded message" in rules.nth(2).inner_text()
            mute = page.locator("#mutes tbody tr")
            assert mute.count() == 1 and "in-force" in (mute.get_attribute("class") or "")
            assert REASON in mute.inner_text() and mute.locator("img").count() == 0
            states = page.locator("#messages tr.message")
            assert states.count() > 0
            assert page.locator("#messages tr.state-failed").count() == 1
            assert page.locator("#messages tr.state-muted").count() > 0

            preview = page.locator("#digest-preview")
            subject = page.locator("#digest-subject").inner_text()
            assert subject.startswith("evening digest for all applications: "), subject
            assert facts(page)["Applications"] == "3"  # the three that ended in its period
            text = preview.inner_text()
            assert HOSTILE_NAME in text  # the costliest application, as text
            assert preview.locator("script, img").count() == 0
            page.screenshot(path=str(SHOTS / "notifications-page.png"), full_page=True)

            page.fill("#scope-form input[name=name]", "^nightly_<")
            page.click("#scope-form button[type=submit]")
            page.wait_for_load_state()
            assert "name=%5Enightly_%3C" in page.url
            assert page.locator("#scope-form input[name=name]").input_value() == "^nightly_<"
            assert "^nightly_<" in page.locator("#digest-subject").inner_text()
            assert facts(page)["Applications"] == "1"  # only the hostile-named one matches
            worst = page.locator("#digest-preview li")
            assert worst.count() == 1 and HOSTILE_NAME in worst.inner_text()
            assert page.locator("#digest-preview script, #digest-preview img").count() == 0
            page.screenshot(path=str(SHOTS / "notifications-scope-preview.png"), full_page=True)
            assert page.title() != "pwned"
            assert errors == []
    finally:
        app.extensions["sparkscope.engine"].dispose()
    assert _outbox(factory) == before  # the page only reads
