"""Secret masking shared by the fetcher and the web app."""

from __future__ import annotations

import re

import pytest

from sparkscope.config.settings import DEFAULT_REDACTION_REGEX
from sparkscope.redaction import REDACTED, redact

PATTERN = re.compile(DEFAULT_REDACTION_REGEX)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("spark.hadoop.fs.s3a.secret.key", "AKIA123", REDACTED),
        ("spark.ssl.keyStorePassword", "hunter2", REDACTED),
        ("spark.custom.url", "jdbc:postgresql://db/x?password=hunter2", REDACTED),
        ("spark.executor.memory", "4g", "4g"),
        ("spark.api.token", None, None),
    ],
)
def test_key_or_value_match_masks(name: str, value: str | None, expected: str | None) -> None:
    assert redact(name, value, PATTERN) == expected
    assert redact(name, value, DEFAULT_REDACTION_REGEX) == expected
