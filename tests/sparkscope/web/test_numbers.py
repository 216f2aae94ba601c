"""Numbers in query parameters are ASCII digits only, everywhere, and stay within what JSON
clients hold exactly: anything else is a 400 naming the parameter in our words."""

from __future__ import annotations

import json

import pytest
from flask import Response, jsonify
from flask.testing import FlaskClient

from sparkscope.advisor.whatif.sizing import (
    MAX_JSON_INT,
    parse_counts,
    parse_deadline,
    parse_positive,
)
from tests.sparkscope.web.conftest import Fleet, make_app

WHATIF = "/api/apps/app-002/whatif"
ADVISE = "/api/advise?name=daily_sales_etl"


@pytest.mark.parametrize(
    ("url", "param"),
    [
        (f"{WHATIF}?executors=٣", "executors"),
        (f"{WHATIF}?executors=²", "executors"),
        (f"{WHATIF}?executors=①", "executors"),
        (f"{WHATIF}?executors=1_000", "executors"),
        (f"{WHATIF}?cores=٣", "cores"),
        (f"{WHATIF}?cores=²", "cores"),
        (f"{WHATIF}?cores=1_0", "cores"),
        (f"{WHATIF}?cores=%2B4", "cores"),
        (f"{WHATIF}?input_scale=1_0", "input_scale"),
        (f"{WHATIF}?input_scale=٣", "input_scale"),
        (f"{WHATIF}?input_scale=1e2", "input_scale"),
        (f"{WHATIF}?input_scale=inf", "input_scale"),
        (f"{ADVISE}&deadline=٣h", "deadline"),
        (f"{ADVISE}&deadline=1e29h", "deadline"),
        (f"{ADVISE}&deadline={'9' * 30}h", "deadline"),
        (f"{ADVISE}&deadline={'9' * 309}h", "deadline"),
        (f"{ADVISE}&deadline=2501999793h", "deadline"),
        (f"{ADVISE}&deadline=1h&input_bytes=١٠٠", "input_bytes"),
        (f"{ADVISE}&deadline=1h&input_bytes=1_000", "input_bytes"),
        (f"{ADVISE}&deadline=1h&input_bytes=9007199254740993", "input_bytes"),
        (f"{ADVISE}&deadline=1h&cores=٢,4", "cores"),
        ("/search?page=٣", "page"),
        ("/api/apps?page=1_0", "page"),
        ("/?days=²", "days"),
        ("/apps/app-002?stage_page=①", "stage_page"),
        ("/search?severity=٣", "severity"),
        ("/search?start_from=٢٠٢٤-٠١-٠١", "start_from"),
    ],
)
def test_non_ascii_or_unbounded_numbers_are_a_400_naming_the_parameter(
    client: FlaskClient, url: str, param: str
) -> None:
    resp = client.get(url)
    assert resp.status_code == 400, url
    body = resp.get_data(as_text=True)
    assert f"invalid parameter {param!r}" in body or f"invalid parameter &#39;{param}&#39;" in body
    assert "invalid literal" not in body and "could not convert" not in body


def test_the_parsers_take_ascii_digits_and_keep_json_exact_values() -> None:
    assert parse_counts("1, 2,16") == [1, 2, 16]
    assert parse_positive("2.5", "scale") == 2.5
    assert parse_positive("1024", "count", True) == 1024
    assert parse_deadline(f"{366 * 24}h") <= MAX_JSON_INT  # the longest deadline taken
    assert parse_deadline("90s") == 90_000 and parse_deadline("1.5m") == 90_000
    for bad in ("٣", "²", "①", "1_000", "1e3", " ", "-1", "0x10"):
        with pytest.raises(ValueError, match="digits 0-9") as err:
            parse_counts(bad if bad.strip() else "1,,2")
        assert "invalid literal" not in str(err.value)
    with pytest.raises(ValueError, match="at most"):
        parse_positive(str(MAX_JSON_INT + 1), "byte count", True)


def test_a_non_finite_number_is_never_sent_as_json(fleet: Fleet) -> None:
    app = make_app(fleet.url)

    @app.route("/api/probe-nan")
    def probe() -> Response:
        return jsonify(value=float("nan"))

    resp = app.test_client().get("/api/probe-nan")
    assert resp.status_code == 500

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    body = json.loads(resp.get_data(as_text=True), parse_constant=refuse)
    assert body["status"] == 500
