"""failure_text.keep_message: whole failure messages, bounded."""

from __future__ import annotations

from heuristics.failure_text import keep_message


def test_short_messages_are_kept_whole() -> None:
    text = "Traceback (most recent call last):\n  File x\nValueError: bad\n\tat org.Foo.bar(Foo.java:1)"
    assert keep_message(f"  {text}\n") == text
    assert keep_message(None) is None and keep_message("  \n") is None


def test_long_messages_lose_jvm_frames_before_the_cause() -> None:
    frames = "".join(f"\tat org.apache.Spark.f{i}(Spark.scala:{i})\n" for i in range(400))
    text = (
        "SparkException: Job aborted\n"
        + frames
        + "Caused by: java.io.IOException: disk\n\t... 12 more"
    )
    kept = keep_message(text, limit=200)
    assert kept == "SparkException: Job aborted\nCaused by: java.io.IOException: disk"
    huge = keep_message("x" * 500, limit=100)
    assert huge is not None and len(huge) == 100 and huge.endswith("…")
