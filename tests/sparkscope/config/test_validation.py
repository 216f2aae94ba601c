"""Every configuration value is validated when it is read: out-of-range, non-finite or unparsable
values are refused in one line naming the file and the key (and `sparkscope` exits 2)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from sparkscope.config.loader import load_config, parse_config
from sparkscope.config.parsing import ConfigError

SERVER = "servers: [{name: a, url: 'http://shs:18080', %s}]\n"


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("web: {port: 100000000000000000000000}\n", "web.port", "<= 65535"),
        ("web: {port: 0}\n", "web.port", ">= 1"),
        ("web: {port: 65536}\n", "web.port", "<= 65535"),
        ("web: {page_size: 1000000000}\n", "web.page_size", "<= 1000"),
        ("web: {page_size: 1e9}\n", "web.page_size", "expected an integer"),
        ("web: {page_size: 1.0e+9}\n", "web.page_size", "expected an integer"),
        ("web: {host: 'my host'}\n", "web.host", "host name or address"),
        (SERVER % "read_timeout_s: .nan", "servers[0].read_timeout_s", "finite"),
        (SERVER % "read_timeout_s: .inf", "servers[0].read_timeout_s", "finite"),
        (SERVER % "connect_timeout_s: 0", "servers[0].connect_timeout_s", "> 0"),
        (SERVER % "request_deadline_s: -1", "servers[0].request_deadline_s", "> 0"),
        (SERVER % "request_deadline_s: 1.0e+30", "servers[0].request_deadline_s", "<="),
        ("servers: [{name: a, url: 'http://'}]\n", "servers[0].url", "host"),
        ("servers: [{name: a, url: 'http://shs:99999'}]\n", "servers[0].url", "port"),
        ("servers: [{name: a, url: 'http://shs:x'}]\n", "servers[0].url", "port"),
        ("servers: [{name: a, url: 'http://sh s:18080'}]\n", "servers[0].url", "space"),
        ("servers: [{name: a, url: 'http://shs/?q=1'}]\n", "servers[0].url", "query"),
        ("servers: [{name: \"a\\nb\", url: 'http://shs'}]\n", "servers[0].name", "control"),
        ("fetcher: {threads: 100000}\n", "fetcher.threads", "<="),
        ("fetcher: {retries: -1}\n", "fetcher.retries", ">= 0"),
        ("fetcher: {backoff_factor_s: .nan}\n", "fetcher.backoff_factor_s", "finite"),
        ("fetcher: {listing_page_size: 1000000000}\n", "fetcher.listing_page_size", "<="),
        ("fetcher: {tasks_per_stage: 10000000}\n", "fetcher.tasks_per_stage", "<="),
        ("fetcher: {redaction_regex: '(a+)+$'}\n", "fetcher.redaction_regex", "nested"),
        ("prices: {core_hour: .nan}\n", "prices.core_hour", "finite"),
        ("prices: {core_hour: .inf}\n", "prices.core_hour", "finite"),
        ("prices: {gb_hour: -0.5}\n", "prices.gb_hour", ">= 0"),
        ("prices: {currency: ''}\n", "prices.currency", "non-empty"),
        ("predictions: {margin: .nan}\n", "predictions.margin", "finite"),
        ("predictions: {margin: -0.1}\n", "predictions.margin", ">= 0"),
        ("predictions: {level: .nan}\n", "predictions.level", "finite"),
        ("predictions: {level: 1.5}\n", "predictions.level", "<= 0.99"),
        ("predictions: {min_history: 1000000}\n", "predictions.min_history", "<="),
        ("predictions: {key_patterns: ['(a+)+$']}\n", "predictions.key_patterns[0]", "nested"),
        ("predictions: {key_patterns: 'x'}\n", "predictions.key_patterns", "list"),
        ("database_url: 'not a url'\n", "database_url", "database URL"),
        ("database_url: 'mysql://u@h/db'\n", "database_url", "postgresql"),
        ("database_url: 'postgresql://u@h:99999/db'\n", "database_url", "port"),
        ("data_dir: ''\n", "data_dir", "non-empty"),
    ],
)
def test_out_of_range_values_are_refused_naming_file_and_key(
    tmp_path: Path, text: str, key: str, fragment: str
) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(f, env={})
    assert err.value.key == key, str(err.value)
    message = str(err.value)
    assert message.startswith(f"{f}: {key}: "), message
    assert fragment in message and "\n" not in message


def test_a_refused_database_url_never_echoes_its_password(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("database_url: 'oracle://scott:tiger-secret@db/orcl'\n")
    with pytest.raises(ConfigError) as err:
        load_config(f, env={})
    assert "tiger-secret" not in str(err.value) and err.value.key == "database_url"


def test_environment_overrides_are_validated_too(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\$SPARKSCOPE_DATABASE_URL: .*database URL"):
        load_config(env={"SPARKSCOPE_DATABASE_URL": "not a url", "SPARKSCOPE_DATA_DIR": "/x"})


def test_edge_values_inside_the_ranges_are_accepted() -> None:
    config = parse_config(
        {
            "database_url": "postgresql+psycopg://u:p@db.example:5432/sparkscope",
            "web": {"port": 65535, "page_size": 1000, "host": "::1"},
            "servers": [{"name": "a", "url": "https://shs.example:1", "read_timeout_s": 0.5}],
            "prices": {"core_hour": 0, "gb_hour": 12.5},
            "predictions": {"margin": 0, "level": 0.5, "key_patterns": [r"\d{4}-\d{2}-\d{2}"]},
            "fetcher": {"retries": 0, "threads": 1},
        }
    )
    assert config.web.port == 65535 and config.servers[0].read_timeout_s == 0.5
    assert config.prices.core_hour == 0.0 and math.isfinite(config.prices.gb_hour or 0)
    for url in ("postgres://u@db/x", "postgresql+psycopg2://u@db/x", "sqlite:///rel.db"):
        assert parse_config({"database_url": url}).database_url == url


@pytest.mark.parametrize(
    "text",
    [
        "web: {port: 100000000000000000000000}\n",
        "servers: [{name: b, url: 'http://127.0.0.1:9', read_timeout_s: .nan}]\n",
        "database_url: 'not a url'\n",
        "predictions: {margin: .nan}\n",
    ],
)
def test_the_command_exits_2_with_one_line(tmp_path: Path, text: str) -> None:
    bad = tmp_path / "s.yaml"
    if not text.startswith("servers"):  # a server to fetch from, so that only the value is wrong
        text += "servers: [{name: a, url: 'http://127.0.0.1:9', connect_timeout_s: 1}]\n"
    bad.write_text(f"database_url: sqlite:///{tmp_path / 'x.db'}\n{text}")
    proc = subprocess.run(
        [sys.executable, "-m", "sparkscope", "--config", str(bad), "fetch"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sparkscope: config error: "), proc.stderr
    assert str(bad) in lines[0]


@pytest.mark.parametrize(
    ("args", "text", "fragment"),
    [
        (["fetch"], "servers: [{name: a, url: 'https://127.0.0.1:9', ca_bundle: /nonexistent/ca.pem}]\n", "ca_bundle"),
        (["fetch", "--url", "http://127.0.0.1:99999"], "", "--url"),
        (["fetch", "--url", "http://127.0.0.1:9", "--threads", "100000"], "", "--threads"),
        (["serve", "--port", "100000000000000000000000"], "", "--port"),
    ],
)  # fmt: skip
def test_command_line_values_are_checked_like_the_file(
    tmp_path: Path, args: list[str], text: str, fragment: str
) -> None:
    config = tmp_path / "s.yaml"
    config.write_text(f"database_url: sqlite:///{tmp_path / 'x.db'}\n{text}")
    proc = subprocess.run(
        [sys.executable, "-m", "sparkscope", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert fragment in proc.stderr and "Traceback" not in proc.stderr
