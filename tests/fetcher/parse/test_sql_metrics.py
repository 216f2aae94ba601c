"""The compact form a SQL node row keeps of each metric (`fetcher.parse.sql.metrics`)."""

from __future__ import annotations

from fetcher.parse.sql.metrics import STORED_FIELDS, parse_metric


def test_a_stored_metric_is_every_field_but_the_name_in_stored_order() -> None:
    m = parse_metric("peak memory", "45.8 MiB (22.9 MiB, 22.9 MiB, 22.9 MiB (stage 5.0: task 16))")
    mib = 1024**2
    want = ["bytes", 45.8 * mib, 22.9 * mib, 22.9 * mib, 22.9 * mib, 5, 0, 16, None]
    assert m.stored() == want
    assert len(STORED_FIELDS) == len(want) == len(m) - 1  # one stored value per named field
