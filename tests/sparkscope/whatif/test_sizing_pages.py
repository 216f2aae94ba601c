"""The what-if page (/apps/<id>/whatif) and the sizing page (/advise?name=..) on the recorded
scaling corpus: plain words, the settings of a size, the same answers as the JSON API, one interval
wording, the model behind a fold, clear errors and escaping."""

from __future__ import annotations

import html as html_lib
import json
import re
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from sparkscope.advisor.whatif.sizing import recommend
from tests.sparkscope.whatif.conftest import whatif_app
from tests.sparkscope.whatif.test_api import CHURN_8X, NIGHTLY

XSS = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def client(corpus_url: str) -> Iterator[FlaskClient]:
    app = whatif_app(corpus_url)
    yield app.test_client()
    app.extensions["sparkscope.engine"].dispose()


def text_of(html: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"[^>]*>(.*?)</(?:p|ul|section|span)>', html, re.S)
    assert match is not None, element_id
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", "", match.group(1))).split())


def test_whatif_page_says_sizes_in_words_with_their_settings(client: FlaskClient) -> None:
    resp = client.get(f"/apps/{CHURN_8X}/whatif")
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    assert text_of(html, "whatif-observed") == (
        "This run: 8 executors of 1 core: spark.executor.instances=8, spark.executor.cores=1; "
        "it took 1.2 min."
    )
    api = client.get(f"/api/apps/{CHURN_8X}/whatif").get_json()
    rows = re.findall(r"<tr(?: class=\"recommended\")?>\s*<td>([^<]+)</td>", html)
    assert rows == [
        f"{p['executors']} executor{'s' if p['executors'] != 1 else ''} of 1 core"
        for p in api["points"]
    ]
    assert "1 executors" not in html and "1 cores" not in html
    assert "Give a deadline below" in html
    # The model and its formula are behind the fold, not in the main text.
    fold = html[html.index('id="whatif-how"') :]
    assert api["model"] in html_lib.unescape(fold)
    assert html_lib.unescape(html).index(api["model"]) > html.index('id="whatif-how"')


def test_whatif_deadline_recommends_what_the_api_points_give(client: FlaskClient) -> None:
    html = client.get(f"/apps/{CHURN_8X}/whatif?deadline=90s").get_data(as_text=True)
    api = client.get(f"/api/apps/{CHURN_8X}/whatif").get_json()
    best = recommend(api["points"], 90_000)
    assert best is not None
    line = text_of(html, "whatif-recommendation")
    assert line.startswith(
        f"For a deadline of 90 s: {best['executors']} executors of 1 core: "
        f"spark.executor.instances={best['executors']}, spark.executor.cores=1 — predicted "
    )
    assert "likely" in line  # this application has an interval: one wording everywhere
    block = re.search(r'<pre class="conf" id="whatif-conf-text">(.*?)</pre>', html, re.S)
    assert block is not None
    assert block.group(1) == (
        f"--conf spark.executor.instances={best['executors']} \\\n--conf spark.executor.cores=1"
    )
    figure = json.loads(
        re.search(r'id="whatif-figure">(.*?)</script>', html, re.S).group(1)  # type: ignore[union-attr]
    )
    assert figure["layout"]["xaxis"]["title"]["text"] == "executors (1 core each)"
    names = {t.get("name") for t in figure["data"]}
    assert {"recommended", "this run", "1 core each: likely range"} <= names
    none = client.get(f"/apps/{CHURN_8X}/whatif?deadline=1s").get_data(as_text=True)
    assert text_of(none, "whatif-recommendation").startswith("Nothing shown meets 1 s")


def test_whatif_page_other_sizes_and_bad_parameters(client: FlaskClient) -> None:
    html = client.get(f"/apps/{CHURN_8X}/whatif?executors=2,4&cores=2").get_data(as_text=True)
    assert re.findall(r"<tr>\s*<td>([^<]+)</td>", html) == [
        "2 executors of 2 cores",
        "4 executors of 2 cores",
    ]
    for query, param in (
        ("executors=0", "executors"),
        ("executors=a,b", "executors"),
        ("cores=2000", "cores"),
        ("deadline=soon", "deadline"),
    ):
        resp = client.get(f"/apps/{CHURN_8X}/whatif?{query}")
        assert resp.status_code == 400 and f"&#39;{param}&#39;" in resp.get_data(as_text=True)
    assert client.get("/apps/no-such-app/whatif").status_code == 404
    # Reached from the application page and from the navigation.
    assert f'href="/apps/{CHURN_8X}/whatif' in client.get(f"/apps/{CHURN_8X}").get_data(
        as_text=True
    )
    chooser = client.get("/whatif").get_data(as_text=True)
    assert 'id="nav-whatif"' in chooser and f'href="/apps/{CHURN_8X}/whatif' in chooser
    same = client.get(f"/whatif?app_id={CHURN_8X}").get_data(as_text=True)
    assert text_of(same, "whatif-observed").startswith("This run: 8 executors of 1 core")


def test_sizing_page_defaults_to_the_latest_runs_time_and_matches_the_api(
    client: FlaskClient,
) -> None:
    html = client.get(f"/advise?name={NIGHTLY}").get_data(as_text=True)
    note = text_of(html, "advise-default-deadline")
    assert note.startswith("Deadline ") and "as long as the latest run" in note
    deadline = re.search(r"Deadline ([^:]+):", note)
    assert deadline is not None
    explicit = client.get(f"/advise?name={NIGHTLY}&deadline=45s").get_data(as_text=True)
    api = client.get(f"/api/advise?name={NIGHTLY}&deadline=45s").get_json()
    rec = api["recommended"]
    line = text_of(explicit, "advise-recommendation")
    size = f"{rec['executors']} executor{'s' if rec['executors'] != 1 else ''} of "
    size += f"{rec['cores']} core{'s' if rec['cores'] != 1 else ''}"
    assert line.startswith(
        f"For 45 s: {size}: spark.executor.instances={rec['executors']}, "
        f"spark.executor.cores={rec['cores']} — predicted"
    )
    assert 'id="advise-conf-text">--conf spark.executor.instances=' in explicit
    assert api["model"] in html_lib.unescape(explicit[explicit.index('id="advise-how"') :])
    figure = json.loads(
        re.search(r'id="advise-figure">(.*?)</script>', explicit, re.S).group(1)  # type: ignore[union-attr]
    )
    assert figure["layout"]["xaxis"]["title"]["text"].startswith("executors")
    # One band at most: the recommended core count's.
    assert len([t for t in figure["data"] if t.get("fill") == "tonexty"]) <= 1
    assert 'id="nav-sizing"' in explicit


def test_sizing_page_errors_are_pages_and_escaped(client: FlaskClient) -> None:
    form = client.get("/advise")
    assert form.status_code == 200 and 'id="advise-form"' in form.get_data(as_text=True)
    unknown = client.get("/advise?name=" + XSS.replace("<", "%3C"))
    assert unknown.status_code == 200  # no run of that name: asks for a deadline, escaped
    body = unknown.get_data(as_text=True)
    assert XSS not in body and "&lt;script&gt;" in body
    missing = client.get("/advise?name=nope&deadline=1h")
    assert missing.status_code == 404 and "no stored run named" in missing.get_data(as_text=True)
    assert client.get(f"/advise?name={NIGHTLY}&deadline=fast").status_code == 400
