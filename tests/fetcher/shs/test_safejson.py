"""Bodies are decoded by orjson where a byte scan finds no number that could be out of range;
every body decodes to what ``json`` gives, and what ``json`` refuses is still refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fetcher.shs import safejson

ROOT = Path(__file__).resolve().parents[3]


def test_recorded_bodies_decode_as_json_decodes_them() -> None:
    bodies = sorted((ROOT / "demo" / "spark-events" / "api").rglob("*.json"))
    assert len(bodies) > 100
    for path in bodies:
        body = path.read_bytes()
        assert safejson.loads(body) == json.loads(body), path


@pytest.mark.parametrize(
    "body",
    [
        b'{"name": "lone \\ud800 surrogate"}',  # orjson refuses it, json reads it
        '\ufeff{"bom": 1}'.encode(),  # a UTF-8 byte order mark
        '{"utf16": "é"}'.encode("utf-16"),
        b'{"a": 1, "a": 2}',
        b"[1.5e308, -0.0, 1e-320]",
    ],
)
def test_what_orjson_refuses_or_reads_differently_is_decoded_by_json(body: bytes) -> None:
    assert safejson.loads(body) == json.loads(body)
    assert safejson.loads_marking(body) == json.loads(body)


@pytest.mark.parametrize(
    "body",
    [
        b"[NaN]",
        b'{"x": Infinity}',
        b"[1e400]",
        b'{"id": "e000-uuid", "x": -1.5E+309}',
        b"[18446744073709551616]",
        b"[9223372036854775808]",  # 2**63: orjson reads it, a bigint cannot hold it
        b"[-9223372036854775809]",
    ],
)
def test_numbers_json_or_the_database_cannot_hold_are_refused(body: bytes) -> None:
    with pytest.raises(safejson.HostileNumber):
        safejson.loads(body)
    assert safejson.find_hostile(safejson.loads_marking(body)) is not None


def test_a_truncated_body_is_invalid_json() -> None:
    with pytest.raises(ValueError):
        safejson.loads(b'[{"jobId": 0, "name": "trunc')


UNREAD = ("hadoopProperties", "classpathEntries")


def test_unread_members_of_recorded_environments_come_back_empty_the_rest_unchanged() -> None:
    bodies = sorted((ROOT / "demo").rglob("*/environment.json"))
    assert len(bodies) > 20
    for path in bodies:
        body = path.read_bytes()
        whole = json.loads(body)
        read = safejson.loads_unread(body, UNREAD)
        assert whole["hadoopProperties"] and whole["classpathEntries"], path  # there to drop
        assert read == {**whole, "hadoopProperties": [], "classpathEntries": []}, path
        assert len(safejson.without_members(body, UNREAD)) < len(body) / 3


# The History Server's form: a top-level array on its line, two spaces of indent, " : ".
JACKSON = (
    b'{\n  "runtime" : {\n    "javaVersion" : "17"\n  },\n'
    b'  "hadoopProperties" : [ [ "a", "b" ], [ "c", "x\\n  \\"classpathEntries\\" : [" ] ],\n'
    b'  "sparkProperties" : [ [ "k", "v" ] ],\n'
    b'  "classpathEntries" : [ [ "/x.jar", "System Classpath" ] ]\n}'
)


@pytest.mark.parametrize(
    "body",
    [
        JACKSON,
        # the last member, its line closing the object
        JACKSON.replace(b" ] ]\n}", b" ] ] }"),
        # other writers' forms: arrays over several lines, no space before the colon, compact
        json.dumps(json.loads(JACKSON), indent=2).encode(),
        json.dumps(json.loads(JACKSON), indent=2, separators=(",", " : ")).encode(),
        json.dumps(json.loads(JACKSON)).encode(),
        # a member named in a string at the start of a line cannot be: strings hold no line break
        b'{\n  "sparkProperties" : [ [ "k", "v" ] ],\n  "hadoopProperties" : 7\n}',
    ],
)
def test_a_body_in_any_form_decodes_to_its_members_with_the_unread_ones_empty_or_whole(
    body: bytes,
) -> None:
    whole = json.loads(body)
    read = safejson.loads_unread(body, UNREAD)
    assert read.keys() == whole.keys()
    for key, value in whole.items():
        assert read[key] == value or (key in UNREAD and read[key] == []), key


def test_a_hostile_number_in_an_unread_member_is_not_read_and_elsewhere_still_refused() -> None:
    unread = JACKSON.replace(b'[ "a", "b" ]', b"[ 1e400, NaN ]")
    assert safejson.loads_unread(unread, UNREAD)["hadoopProperties"] == []
    read = JACKSON.replace(b'[ "k", "v" ]', b"[ 18446744073709551616 ]")
    with pytest.raises(safejson.HostileNumber):
        safejson.loads_unread(read, UNREAD)
