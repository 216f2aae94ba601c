"""What-if and sizing answers in plain words and their charts: counts in the singular when one,
the settings of a size, one interval wording, a band only where there is an interval."""

from __future__ import annotations

from typing import Any

from sparkscope.present.sizing import (
    cheapest,
    cores_label,
    duration_figure,
    fastest,
    fmt_deadline,
    has_interval,
    interval_words,
    point_sentence,
    size_conf,
    size_words,
)


def point(n: int, ms: float, low: float | None = None, high: float | None = None, **extra: Any):
    return {
        "executors": n,
        "cores": extra.pop("cores", 1),
        "predicted_ms": ms,
        "low_ms": ms if low is None else low,
        "high_ms": ms if high is None else high,
        "core_hours": extra.pop("core_hours", n * ms / 3.6e6),
        "cost": extra.pop("cost", None),
    }


def test_sizes_read_as_counts_with_their_settings() -> None:
    assert size_words(4, 1) == "4 executors of 1 core"
    assert size_words(1, 4) == "1 executor of 4 cores"
    assert size_words(1, 1) == "1 executor of 1 core"
    assert size_conf(4, 1) == [("spark.executor.instances", "4"), ("spark.executor.cores", "1")]
    assert size_conf(10, 2, dynamic=True)[0] == ("spark.dynamicAllocation.maxExecutors", "10")
    assert cores_label(1) == "1 core each" and cores_label(8) == "8 cores each"


def test_one_interval_wording_and_none_where_there_is_none() -> None:
    banded = point(4, 60_000, 50_000, 70_000)
    bare = point(4, 60_000)
    assert interval_words(banded) == "likely 50 s–1.2 min"
    assert interval_words(bare) == ""
    assert point_sentence(banded) == "predicted 1.0 min (likely 50 s–1.2 min), 0.0667 core-hours"
    assert point_sentence(bare) == "predicted 1.0 min, 0.0667 core-hours"
    priced = point(2, 30_000, cost=0.25)
    assert point_sentence(priced, "EUR").endswith("core-hours, 0.25 EUR")
    assert has_interval([bare, banded]) and not has_interval([bare])


def test_deadlines_read_as_they_were_asked() -> None:
    assert [fmt_deadline(ms) for ms in (90_000, 80_000, 1_800_000, 7_200_000, 1500, 450)] == [
        "90 s", "80 s", "30 min", "2 h", "1.5 s", "450 ms",
    ]  # fmt: skip
    assert fmt_deadline(None) == ""


def test_fastest_and_cheapest() -> None:
    points = [point(1, 100_000, core_hours=0.03), point(4, 40_000, core_hours=0.05)]
    assert fastest(points)["executors"] == 4
    assert cheapest(points)["executors"] == 1
    assert fastest([]) is None and cheapest([]) is None


def test_chart_draws_a_band_only_with_an_interval_and_names_its_axes() -> None:
    banded = [point(n, 100_000 / n, 90_000 / n, 110_000 / n) for n in (1, 2, 4)]
    bare = [point(n, 100_000 / n, cores=2) for n in (1, 2, 4)]
    fig = duration_figure(
        [("1 core each", banded, True), ("2 cores each", bare, True)],
        observed={"executors": 2, "duration_ms": 52_000},
        deadline_ms=45_000,
        cost_series=banded,
        x_title="executors (1 core each)",
    )
    names = [t.get("name") for t in fig["data"]]
    assert "1 core each: likely range" in names and "2 cores each: likely range" not in names
    fills = [t for t in fig["data"] if t.get("fill") == "tonexty"]
    assert len(fills) == 1 and fills[0]["y"] == [110.0, 55.0, 27.5]
    assert fig["layout"]["xaxis"]["title"]["text"] == "executors (1 core each)"
    assert fig["layout"]["yaxis"]["title"]["text"] == "duration (s)"
    assert fig["layout"]["yaxis2"]["title"]["text"] == "core-hours"
    assert fig["layout"]["shapes"][0]["y0"] == 45.0
    assert {"this run", "core-hours"} <= set(names)
    # A line asked to go without its band gets none even with an interval.
    quiet = duration_figure([("1 core each", banded, False)])
    assert not [t for t in quiet["data"] if t.get("fill")]
