"""Plotly's JavaScript comes from the installed plotly package, not from a copy in the repository."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from flask.testing import FlaskClient

from sparkscope import assets

ROOT = Path(__file__).resolve().parents[3]


def test_plotly_js_is_the_plotly_package_file(client: FlaskClient) -> None:
    shipped = (files("plotly") / "package_data" / "plotly.min.js").read_bytes()
    with client.get("/static/js/plotly.min.js") as resp:
        assert resp.status_code == 200
        assert resp.mimetype == "text/javascript"
        assert resp.get_data() == shipped
    assert assets.plotly_js().read_bytes() == shipped
    assert not list(ROOT.glob("static/**/plotly*.js"))  # no copy kept in the repository


def test_history_page_loads_the_served_plotly(client: FlaskClient) -> None:
    page = client.get("/history?name=retried job").get_data(as_text=True)
    assert '<script src="/static/js/plotly.min.js"></script>' in page
