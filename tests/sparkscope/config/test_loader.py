"""Configuration: strict parsing, env overrides, one-line errors naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkscope.config.loader import BUNDLED_CONFIG_DIR, load_config, parse_config
from sparkscope.config.parsing import ConfigError

EXAMPLE = Path(__file__).resolve().parents[3] / "config" / "sparkscope.example.yaml"


def test_defaults_without_file_use_sqlite_in_data_dir(tmp_path: Path) -> None:
    config = load_config(env={"SPARKSCOPE_DATA_DIR": str(tmp_path)})
    assert config.database_url == f"sqlite:///{tmp_path / 'sparkscope.db'}"
    assert config.servers == ()
    assert config.heuristics_path == str(BUNDLED_CONFIG_DIR / "heuristics.yaml")


def test_example_file_parses_with_every_section() -> None:
    config = load_config(EXAMPLE, env={})
    assert [s.name for s in config.servers] == ["prod", "staging"]
    assert config.servers[1].verify_tls is True and config.servers[1].ca_bundle
    assert config.fetcher.threads == 4
    assert config.database_url.startswith("postgresql")


def test_env_overrides_database_url_and_config_path(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("database_url: sqlite:///x.db\nweb: {port: 9000}\n")
    config = load_config(
        env={"SPARKSCOPE_CONFIG": str(f), "SPARKSCOPE_DATABASE_URL": "sqlite:///y.db"}
    )
    assert config.database_url == "sqlite:///y.db"
    assert config.web.port == 9000
    assert config.source == str(f)


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("databse_url: x\n", "databse_url", "unknown key"),
        ("fetcher: {threads: two}\n", "fetcher.threads", "expected an integer"),
        ("fetcher: {threads: 0}\n", "fetcher.threads", ">= 1"),
        ("fetcher: {colour: red}\n", "fetcher.colour", "unknown key"),
        ("servers: [{name: a}]\n", "servers[0].url", "missing"),
        ("servers: [{name: a, url: 'ftp://x'}]\n", "servers[0].url", "http"),
        (
            "servers: [{name: a, url: 'http://x', verify_tls: 'yes'}]\n",
            "servers[0].verify_tls",
            "true or false",
        ),
        (
            "servers: [{name: a, url: 'http://x'}, {name: a, url: 'http://y'}]\n",
            "servers[1].name",
            "duplicate",
        ),
        ("web: [1, 2]\n", "web", "mapping"),
        ("fetcher: {redaction_regex: '('}\n", "fetcher.redaction_regex", "regular expression"),
        ("servers: {a: 1}\n", "servers", "list"),
    ],
)
def test_bad_values_name_file_and_key(tmp_path: Path, text: str, key: str, fragment: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(f, env={})
    assert err.value.key == key
    assert str(f) in str(err.value) and key in str(err.value) and fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "broken.yaml"
    f.write_text("web:\n  port: [8080\n")
    with pytest.raises(ConfigError, match=r"broken.yaml: line \d+: invalid YAML"):
        load_config(f, env={})


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(env={"SPARKSCOPE_CONFIG": str(tmp_path / "nope.yaml")})


def test_heuristics_path_beside_config_file_wins(tmp_path: Path) -> None:
    (tmp_path / "heuristics.yaml").write_text("{}\n")
    config = parse_config({}, file="x", env={}, base_dir=tmp_path)
    assert config.heuristics_path == str(tmp_path / "heuristics.yaml")
    with pytest.raises(ConfigError, match="no server named 'zz'"):
        config.server("zz")
