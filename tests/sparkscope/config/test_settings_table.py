"""The settings table is the one source: every dataclass field of the configuration is a setting
with the same default, and every setting is a field (or a top-level value of Config)."""

from __future__ import annotations

import dataclasses

from sparkscope.config.loader import (
    SECTIONS,
    Config,
    FetcherConfig,
    PredictionConfig,
    PriceConfig,
    ServerConfig,
    WebConfig,
    parse_config,
)
from sparkscope.config.settings import REQUIRED, SETTINGS

CLASSES = {
    "fetcher": FetcherConfig,
    "web": WebConfig,
    "prices": PriceConfig,
    "predictions": PredictionConfig,
    "servers": ServerConfig,
}
#: Fields that are no setting of their own: the credentials come out of servers[].url.
DERIVED = {"servers": {"username", "password"}}


def test_every_field_is_a_setting_with_its_default() -> None:
    assert set(CLASSES) == {*SECTIONS, "servers"}
    for section, cls in CLASSES.items():
        table = {s.key: s for s in SETTINGS if s.section == section}
        fields = {f.name: f for f in dataclasses.fields(cls)}
        assert set(fields) - DERIVED.get(section, set()) == set(table), section
        for key, setting in table.items():
            field = fields[key]
            if setting.default is REQUIRED:
                assert field.default is dataclasses.MISSING, key
            else:
                assert field.default == setting.default, key


def test_top_level_settings_are_config_fields() -> None:
    top = {s.name for s in SETTINGS if not s.section}
    assert top <= {f.name for f in dataclasses.fields(Config)}
    defaults = parse_config({}, env={"SPARKSCOPE_DATA_DIR": "/srv/ss"})
    assert (
        defaults.data_dir == "/srv/ss"
        and defaults.database_url == "sqlite:////srv/ss/sparkscope.db"
    )


def test_every_default_passes_its_own_validator() -> None:
    for s in SETTINGS:
        if s.default is not REQUIRED and s.default is not None:
            value = list(s.default) if isinstance(s.default, tuple) else s.default
            assert s.validator(value) == s.default, s.name
