"""Every answer a real Spark 4.0.1 SHS gave, compared field by field with ours from the logs.

demo/*-events hold what the SHS answered the fetcher for the shared corpora (`sparkscope dump`);
the sample's five applications are compared always, the whole corpora when the shared folder
is beside the checkout. Only the known differences of tests.support.eventlog_compare are allowed
(lastUpdated: the files' modification times where each read them).
"""

from __future__ import annotations

import pytest

from tests.fetcher.eventlog.conftest import DEMO, RECORDED, SAMPLE, SHARED, need
from tests.support.eventlog_compare import compare_recording


def test_the_sample_answers_as_the_shs_did() -> None:
    requests = 0
    for log in sorted(SAMPLE.iterdir()):
        app_id = log.name.removeprefix("eventlog_v2_")
        report = compare_recording(RECORDED, SAMPLE, only=f"applications/{app_id}/")
        assert report.requests > 5 and not report.failed_requests, report.render()
        assert not report.unknown(), report.render(show=5)
        requests += report.requests
    assert requests > 40


@pytest.mark.parametrize("corpus", ["spark-events", "recurring-events", "scaling-events"])
def test_whole_corpora_answer_as_the_shs_did(corpus: str) -> None:
    report = compare_recording(DEMO / corpus, need(SHARED / corpus))
    assert report.requests > 100 and not report.failed_requests, report.render()
    assert not report.unknown(), report.render(show=5)
    fields = {d.field.rsplit(".", 1)[-1] for d in report.known()}
    assert fields <= {"lastUpdated", "lastUpdatedEpoch"}
