"""Amdahl scaling of a new key's run to other task slots, its parallel share learnt from the
server's other keys.

Known answers: the other keys' work is size * c * (0.2 + 0.8 / slots) exactly (parallel share
0.8 on one slot), so a new key's run of work W on 2 slots takes W * (0.2 + 0.8 / 8) / (0.2 + 0.8
/ 2) = W / 2 on 8 slots. (The same as W * ((1 - q) + q * 2 / 8) with q = 2/3, its parallel share
on its own 2 slots.)
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from sparkscope.advisor.predict import amdahl, rolling
from sparkscope.advisor.predict.backtest import Run, run_backtest
from sparkscope.advisor.predict.features import NUMERIC
from tests.support.prediction import prediction_options

IB, CORES, STARTUP = (NUMERIC.index(n) for n in ("input_bytes", "cores", "startup_ms"))
DAY = 86_400_000


def _rows(sizes: list[float], slots: list[float], startup: float = 3_000) -> np.ndarray:
    X = np.zeros((len(sizes), len(NUMERIC)))
    X[:, IB] = sizes
    X[:, CORES] = slots
    X[:, STARTUP] = startup
    return X


def _durations(X: np.ndarray, p: float = 0.8, per_byte: float = 2e-5) -> np.ndarray:
    return X[:, STARTUP] + per_byte * X[:, IB] * ((1 - p) + p / X[:, CORES])


@pytest.fixture
def amdahl_on() -> Iterator[None]:
    with prediction_options(amdahl="slots"):
        yield


def test_a_keys_share_is_its_parallel_share_on_one_slot_whatever_its_slots() -> None:
    for slots in ([2, 4, 8, 16, 4, 2], [1, 2, 1, 2, 2], [16, 32, 16, 64]):
        sizes = [1e9 * (1 + 0.3 * i) for i in range(len(slots))]
        X = _rows(sizes, slots)
        assert amdahl.key_share(X, _durations(X)) == pytest.approx(0.8, abs=1e-6)
    X = _rows([1e9, 2e9, 3e9, 4e9], [4, 8, 4, 8])
    assert amdahl.key_share(X, _durations(X, p=0.3)) == pytest.approx(0.3, abs=1e-6)


def test_a_fixed_part_of_the_work_is_not_parallel() -> None:
    sizes = [1e9, 2e9, 3e9, 1e9, 2e9, 3e9]
    X = _rows(sizes, [2, 4, 8, 8, 2, 4])
    y = _durations(X) + 10_000  # 10 s per run whatever its size and slots
    median_work_on_one_slot = 2e-5 * 2e9  # the work of the median size on one slot
    want = 0.8 * median_work_on_one_slot / (10_000 + median_work_on_one_slot)
    assert amdahl.key_share(X, y) == pytest.approx(want, abs=1e-6)


def test_no_share_from_one_slot_count_or_too_few_runs() -> None:
    X = _rows([1e9, 2e9, 3e9, 4e9, 5e9], [8] * 5)
    assert amdahl.key_share(X, _durations(X)) is None
    X = _rows([1e9, 2e9, 3e9], [2, 4, 8])
    assert amdahl.key_share(X, _durations(X)) is None


def test_the_pool_is_the_median_and_the_spread_of_the_keys() -> None:
    share = amdahl.pooled([0.9, 0.5, 0.8, 0.7, 0.6])
    assert share is not None
    assert (share.p, share.keys) == (0.7, 5)
    assert share.low == pytest.approx(0.54) and share.high == pytest.approx(0.86)
    assert amdahl.pooled([0.8]) is None  # one key: no spread


def test_one_run_at_2_slots_predicted_at_8_slots() -> None:
    share = amdahl.Share(0.8, 0.7, 0.9, 5)
    Xt = _rows([1e9], [2])
    yt = _durations(Xt)
    x = _rows([1e9], [8], startup=4_000)[0]
    got = amdahl.scaled(Xt, yt, x, share)
    assert got is not None
    work = float(yt[0]) - 3_000
    assert got[0] == pytest.approx(4_000 + work * (0.2 + 0.8 / 8) / (0.2 + 0.8 / 2), rel=0.01)
    q = 0.8 / 2 / (0.2 + 0.8 / 2)  # the share on its own two slots
    assert got[0] == pytest.approx(4_000 + work * ((1 - q) + q * 2 / 8), rel=0.01)
    assert got[1] > got[0] > got[2]  # a smaller share gains less from the slots
    # on its own slots, or from runs on two slot counts, or from four runs: not scaled
    assert amdahl.scaled(Xt, yt, _rows([1e9], [2])[0], share) is None
    X2 = _rows([1e9, 1e9], [2, 4])
    assert amdahl.scaled(X2, _durations(X2), x, share) is None
    X4 = _rows([1e9] * 4, [2] * 4)
    assert amdahl.scaled(X4, _durations(X4), x, share) is None
    assert amdahl.scaled(Xt, yt, x, None) is None


def _predict(share: amdahl.Share | None, slots: list[float]) -> rolling.PredictedRun:
    X = _rows([1e9] * len(slots), slots)
    y = _durations(X)
    n = len(y)
    ok, t = np.ones(n, dtype=bool), np.arange(n, dtype=float) * DAY
    return rolling.predict_run(X, y, ok, t, n - 1, [None] * n, 0.8, share=share)


def test_a_new_key_is_served_by_the_scaled_run_and_its_interval_spans_the_spread(
    amdahl_on: None,
) -> None:
    share = amdahl.Share(0.8, 0.6, 0.95, 7)
    p = _predict(share, [2, 2, 8])
    truth = float(_durations(_rows([1e9], [8]))[0])
    assert p.model == amdahl.MODEL
    assert p.expected == pytest.approx(truth, rel=0.01)
    assert p.low is not None and p.high is not None
    at_low = amdahl.scaled(_rows([1e9] * 2, [2, 2]), _durations(_rows([1e9] * 2, [2, 2])),
                           _rows([1e9], [8])[0], share)  # fmt: skip
    assert at_low is not None
    assert p.low <= at_low[2] and at_low[1] <= p.high
    # Without the scaling the median of the two runs on 2 slots serves: twice the truth.
    plain = _predict(None, [2, 2, 8])
    assert plain.model != amdahl.MODEL and amdahl.MODEL not in plain.predictions
    assert plain.expected == pytest.approx(float(_durations(_rows([1e9], [2]))[0]), rel=0.01)


def test_off_or_no_share_changes_nothing(amdahl_on: None) -> None:
    share = amdahl.Share(0.8, 0.6, 0.95, 7)
    with_share = _predict(share, [2, 4, 8])  # its own runs differ in slots: its slots' prior
    without = _predict(None, [2, 4, 8])
    assert with_share.model == without.model != amdahl.MODEL
    assert with_share.predictions == without.predictions
    with prediction_options(amdahl=""):
        off = _predict(share, [2, 2, 8])
        assert amdahl.MODEL not in off.predictions
        assert (off.expected, off.low, off.high) == (
            (none := _predict(None, [2, 2, 8])).expected,
            none.low,
            none.high,
        )


def _key(name: str, start_day: int, slots: list[float], per_byte: float, grow: float) -> list[Run]:
    X = _rows([1e9 * (1 + grow * (i % 3)) for i in range(len(slots))], slots)
    y = _durations(X, per_byte=per_byte)
    return [
        Run(name, (start_day + i) * DAY, float(y[i]), True, X[i].tolist())
        for i in range(len(slots))
    ]


def test_the_backtest_learns_the_share_from_the_keys_before(amdahl_on: None) -> None:
    others = [
        _key(f"other-{k}", 10 * k, [2, 4, 8, 16, 2, 8], 1e-5 * (1 + k), 0.2) for k in range(3)
    ]
    new = _key("new", 100, [2, 8, 8], 3e-5, 0.0)
    results = run_backtest([r for rs in others for r in rs] + new, 0.8, class_aware=False)
    second = results["new"].points[1]
    assert second is not None and second.model == amdahl.MODEL
    assert second.expected == pytest.approx(new[1].duration_ms, rel=0.01)
    # With one other key there is no spread: the new key's second run is not scaled.
    alone = run_backtest(others[0] + new, 0.8, class_aware=False)["new"].points[1]
    assert alone is not None and alone.model != amdahl.MODEL
    assert alone.expected == pytest.approx(new[0].duration_ms, rel=0.01)
