"""Finding logs, their state, the reading order of rolling files, and damaged lines."""

import shutil
from pathlib import Path

import pytest

from fetcher.eventlog.app import read_application
from fetcher.eventlog.params import NotFound
from fetcher.eventlog.read.files import (
    EventLogError,
    ReadStats,
    codec_of,
    discover,
    iter_events,
    open_log,
)


def test_codec_from_extension_as_spark_names_it():
    assert codec_of("local-1.lz4") == "lz4"
    assert codec_of("local-1.snappy.inprogress") == "snappy"
    assert codec_of("local-1") is None
    assert codec_of("events_3_app-1.zstd") == "zstd"
    assert codec_of("events_3_app-1.zstd.compact") == "zstd"
    with pytest.raises(EventLogError):
        codec_of("local-1.gz")


def test_every_generated_layout_reads(layouts: Path):
    seen = {}
    for src in discover(layouts):
        app = read_application(src.path)
        seen[src.name] = (src.rolling, src.completed, app.status.app.completed)
        assert app.status.jobs, src.path
    assert seen["local-1796114361767.lz4"] == (False, True, True)
    assert seen["local-1796114385794.snappy"] == (False, True, True)
    assert seen["local-1796114417500"] == (False, True, True)
    assert seen["eventlog_v2_local-1796114458679"] == (True, True, True)  # rolling lz4
    # killed driver: rolling zstd with appstatus_....inprogress, no ApplicationEnd
    assert seen["eventlog_v2_local-1796114501063"] == (True, False, False)
    assert seen["local-81796114417500.inprogress"] == (False, False, False)


def test_rolling_files_are_read_in_numeric_order(layouts: Path):
    src = open_log(layouts / "eventlog_v2_local-91796114417500")
    idx = [int(p.rsplit("/", 1)[-1].split("_")[1]) for p in src.files]
    assert idx == list(range(1, 12))
    single = read_application(layouts / "local-1796114417500")
    rolled = read_application(src.path)
    assert rolled.stats.lines == single.stats.lines
    assert [j["numTasks"] for j in rolled.status.jobs.values()] == [
        j["numTasks"] for j in single.status.jobs.values()
    ]


def test_compacted_file_replaces_the_earlier_ones(tmp_path: Path, layouts: Path):
    d = tmp_path / "eventlog_v2_app-1"
    shutil.copytree(layouts / "eventlog_v2_local-91796114417500", d)
    files = sorted(d.glob("events_*"), key=lambda p: int(p.name.split("_")[1]))
    files[4].rename(files[4].with_name(files[4].name + ".compact"))
    src = open_log(d)
    assert src.files[0].endswith(".compact") and len(src.files) == 7


def test_missing_appstatus_marker_is_refused_like_spark(tmp_path: Path, layouts: Path):
    d = tmp_path / "eventlog_v2_local-91796114417500"
    shutil.copytree(layouts / d.name, d)
    next(d.glob("appstatus_*")).unlink()
    with pytest.raises(EventLogError, match="appstatus"):
        open_log(d)
    src = open_log(d, missing_status_in_progress=True)
    assert not src.completed and src.notes
    assert discover(tmp_path) == []  # the SHS skips such a folder too


def test_rolling_folder_without_events_is_refused(tmp_path: Path):
    d = tmp_path / "eventlog_v2_x"
    d.mkdir()
    (d / "appstatus_x").write_bytes(b"")
    with pytest.raises(EventLogError, match="events_"):
        open_log(d)


def test_truncated_last_line_is_skipped_with_a_flag(layouts: Path):
    app = read_application(layouts / "local-81796114417500.inprogress")
    assert app.truncated and app.stats.truncated_last_line
    assert app.stats.skipped_lines == [f"local-81796114417500.inprogress:{app.stats.lines}"]
    # the last complete events were replayed
    assert app.status.jobs


def test_truncated_last_line_of_a_completed_log_is_also_skipped(tmp_path: Path, layouts: Path):
    body = (layouts / "local-1796114417500").read_bytes()
    p = tmp_path / "local-5"
    p.write_bytes(body[:-40])
    app = read_application(p)
    assert app.truncated


def test_garbage_in_the_middle_is_a_clear_error(tmp_path: Path, layouts: Path):
    lines = (layouts / "local-1796114417500").read_bytes().splitlines(keepends=True)
    lines[10] = b'{"Event": "SparkListenerTaskEnd", broken\n'
    p = tmp_path / "local-6"
    p.write_bytes(b"".join(lines))
    with pytest.raises(EventLogError, match="line 11"):
        read_application(p)


def test_non_event_json_is_an_error(tmp_path: Path):
    p = tmp_path / "local-7"
    p.write_bytes(b'{"Event":"SparkListenerLogStart","Spark Version":"4.0.1"}\n[1, 2]\n{"a": 1}\n')
    with pytest.raises(EventLogError, match="line 2"):
        list(iter_events(open_log(p)))


def test_corrupt_compressed_file_is_a_clear_error(tmp_path: Path, layouts: Path):
    p = tmp_path / "local-8.lz4"
    data = bytearray((layouts / "local-1796114361767.lz4").read_bytes())
    data[0:8] = b"NOTLZ4!!"
    p.write_bytes(bytes(data))
    with pytest.raises(EventLogError, match="lz4"):
        read_application(p)


def test_truncated_compressed_stream_is_flagged(tmp_path: Path, layouts: Path):
    p = tmp_path / "local-9.lz4.inprogress"
    data = (layouts / "local-1796114361767.lz4").read_bytes()
    p.write_bytes(data[: len(data) // 2])
    stats = ReadStats()
    events = list(iter_events(open_log(p), stats))
    assert events and stats.truncated_stream


def test_attempt_ids_come_from_the_events(layouts: Path):
    a1 = read_application(layouts / "local-71796114417500_1")
    a2 = read_application(layouts / "local-71796114417500_2")
    assert (a1.app_id, a1.attempt_id, a2.attempt_id) == ("local-71796114417500", "1", "2")
    assert a1.rest("applications/local-71796114417500/1/jobs")
    with pytest.raises(NotFound):
        a1.rest("applications/local-71796114417500/2/jobs")


def test_discover_skips_hidden_and_checksum_files(tmp_path: Path, layouts: Path):
    shutil.copy(layouts / "local-1796114417500", tmp_path / "local-1796114417500")
    (tmp_path / ".hidden").write_bytes(b"x")
    (tmp_path / ".local-1.crc").write_bytes(b"x")
    (tmp_path / "not-a-log-dir").mkdir()
    assert [s.name for s in discover(tmp_path)] == ["local-1796114417500"]


def test_memory_stays_bounded_while_streaming(tmp_path: Path, layouts: Path):
    """Lines are decoded one by one: a 40 MB log never sits in memory."""
    import tracemalloc

    zstandard = pytest.importorskip("zstandard")
    body = (layouts / "local-1796114417500").read_bytes()
    p = tmp_path / "local-10.zstd"
    with open(p, "wb") as f, zstandard.ZstdCompressor().stream_writer(f) as w:
        for _ in range(70):
            w.write(body)
    src = open_log(p)
    tracemalloc.start()
    n = 0
    for _ in iter_events(src):
        n += 1
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert n == 70 * body.count(b"\n")
    assert peak < 8 * 2**20, peak  # 40 MB of text went through


def test_lzf_log_written_by_spark_reads_like_the_others(layouts: Path):
    lzf = read_application(layouts / "local-1796115557875.lzf")
    plain = read_application(layouts / "local-1796114417500")
    assert lzf.stats.lines == plain.stats.lines and not lzf.truncated

    def shape(app):
        return [
            (j["name"], j.get("description"), j["numTasks"], j["status"])
            for j in app.rest(f"applications/{app.app_id}/jobs")
        ]

    assert shape(lzf) == shape(plain)
