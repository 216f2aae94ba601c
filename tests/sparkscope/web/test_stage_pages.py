"""`?stages=all` pages through every stage by id, 200 a page, so that no page renders thousands."""

from __future__ import annotations

import re

from sqlalchemy.orm import Session

from sparkscope.db import make_engine
from tests.sparkscope.web import builders as b
from tests.sparkscope.web.conftest import make_app


def test_all_stages_come_in_pages_by_id(fresh_pg_url: str) -> None:
    engine = make_engine(fresh_pg_url)
    with Session(engine) as session:
        srv = b.server(session)
        b.application(session, srv, "app-wide", num_stages=1203)
        session.commit()
    engine.dispose()
    app = make_app(fresh_pg_url)
    client = app.test_client()

    def stage_ids(html: str) -> list[int]:
        table = re.search(r'id="stage-table">(.*?)</table>', html, re.S)
        assert table is not None
        return [int(i) for i in re.findall(r'<tr>\s*<td data-v="(\d+)">', table.group(1))]

    longest = client.get("/apps/app-wide").get_data(as_text=True)
    assert len(stage_ids(longest)) == 200 and 'id="stages-limited"' in longest
    first = client.get("/apps/app-wide?stages=all").get_data(as_text=True)
    assert stage_ids(first) == list(range(200))
    assert "Stages 1–200 of 1,203, by id." in first
    assert 'rel="next" href="/apps/app-wide?stages=all&amp;stage_page=2#stages"' in first
    assert 'rel="prev"' not in first
    middle = client.get("/apps/app-wide?stages=all&stage_page=3").get_data(as_text=True)
    assert stage_ids(middle) == list(range(400, 600))
    assert 'rel="prev" href="/apps/app-wide?stages=all&amp;stage_page=2#stages"' in middle
    last = client.get("/apps/app-wide?stages=all&stage_page=7").get_data(as_text=True)
    assert stage_ids(last) == [1200, 1201, 1202]
    assert "Stages 1,201–1,203 of 1,203, by id." in last
    assert 'rel="prev"' in last and 'rel="next"' not in last
    beyond = client.get("/apps/app-wide?stages=all&stage_page=9").get_data(as_text=True)
    assert stage_ids(beyond) == [] and "No stages on this page." in beyond
    assert client.get("/apps/app-wide?stages=all&stage_page=0").status_code == 400
    app.extensions["sparkscope.engine"].dispose()
