from __future__ import annotations

import base64
import logging

import pytest

from sparkscope.notify import masking as redact


def test_variants_cover_url_parts_and_auth_encodings() -> None:
    url = "https://hooks.slack.com/services/T0001/B0002/XyZsecretTOKEN42?token=abcdef123"
    v = redact.variants(url)
    assert "/services/T0001/B0002/XyZsecretTOKEN42" in v and "XyZsecretTOKEN42" in v
    assert "abcdef123" in v and "T0001" not in v  # short parts are not worth masking
    assert base64.b64encode(b"\0me\0pw-secret").decode() in redact.variants("pw-secret", "me")
    text = f"POST /services/T0001/B0002/XyZsecretTOKEN42?token=abcdef123 to {url}"
    assert "secret" not in redact.redact(text, v).lower().replace("***", "")
    assert redact.shown_url(url) == "https://hooks.slack.com/…"
    assert redact.shown_url("http://[bad") == "(invalid URL)"


def test_the_filter_masks_messages_arguments_and_tracebacks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    redact.register({"pa55-word-xyz"})
    log = logging.getLogger("sparkscope.notify.channels")
    caplog.set_level(logging.DEBUG)
    log.info("login with %s", "pa55-word-xyz")
    try:
        raise RuntimeError("bad pa55-word-xyz")
    except RuntimeError:
        log.exception("failed")
    assert "pa55-word-xyz" not in caplog.text
    assert "login with ***" in caplog.text and "RuntimeError: bad ***" in caplog.text
