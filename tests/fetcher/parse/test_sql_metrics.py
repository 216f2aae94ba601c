"""The compact form a SQL node row keeps of each metric (`fetcher.parse.sql.metrics`)."""

from __future__ import annotations

import random

from fetcher.parse.sql.metrics import (
    COUNT,
    STORED_FIELDS,
    metric_values,
    parse_metric,
    parse_quantity,
)


def test_a_stored_metric_is_every_field_but_the_name_in_stored_order() -> None:
    m = parse_metric("peak memory", "45.8 MiB (22.9 MiB, 22.9 MiB, 22.9 MiB (stage 5.0: task 16))")
    mib = 1024**2
    want = ["bytes", 45.8 * mib, 22.9 * mib, 22.9 * mib, 22.9 * mib, 5, 0, 16, None]
    assert m.stored() == want
    assert len(STORED_FIELDS) == len(want) == len(m) - 1  # one stored value per named field


def test_a_plain_count_reads_as_the_general_quantity_path_reads_it() -> None:
    """metric_values takes an ASCII digit string without parse_quantity's call: the unit (the
    name's hint, else a count) and the total must be what parse_quantity gives it."""
    rng = random.Random(7)
    texts = ["0", "00", "0123", "7", "1" * 40, " 12 ", "\t5\n"]
    texts += [str(rng.randrange(10 ** rng.randint(1, 25))) for _ in range(2000)]
    for text in texts:
        total, unit = parse_quantity(text.strip())
        assert total is not None and unit == COUNT
        for hint in (None, "bytes", "ms"):
            assert metric_values(text, hint)[:2] == (hint or COUNT, total)
            assert metric_values(text, hint)[2:] == (None,) * 7
    # digits that are not ASCII are left to the general path
    assert metric_values("٣", None)[0] == parse_metric("x", "٣").unit
