"""config: configuration smells judged from Spark properties and Spark's real defaults, only where
they can matter (by deploy mode and by what the application ran)."""

from __future__ import annotations

import pytest

from heuristics.appdata import AppData
from heuristics.builtin import config_review
from heuristics.result import Severity
from tests.heuristics.builders import make_app, make_job, make_stage, run

P = config_review.Params()
KRYO = "org.apache.spark.serializer.KryoSerializer"


def app_with(
    props: dict[str, str], stage_names: tuple[str, ...] = ("collect at x.py:1",)
) -> AppData:
    stages = [make_stage(i, name=n) for i, n in enumerate(stage_names)]
    app = make_app(stages=stages, jobs=[make_job(0, name=stage_names[0])])
    return AppData(**{**app.__dict__, "spark_properties": props})


def smells(result: object) -> dict[str, int]:
    """setting -> the severity its row shows (LOW for a setting without effect here)."""
    details = result.details  # type: ignore[attr-defined]
    return {} if details is None else {row[0]: row[3] for row in details.rows}


def inert(result: object) -> set[str]:
    """The settings listed as having no effect where the application ran."""
    details = result.details  # type: ignore[attr-defined]
    return set() if details is None else {r[0] for r in details.rows if "no effect here" in r[2]}


CLUSTER = {
    "spark.master": "yarn",
    "spark.yarn.queue": "etl",
    "spark.serializer": KRYO,
    "spark.executor.cores": "4",
}


def test_well_configured_cluster_app_has_no_smells() -> None:
    result = run(config_review, app_with(CLUSTER), P)
    assert result.severity == Severity.NONE
    assert result.title == "No configuration smells"
    assert result.impact is None and result.advice == ""


def test_titles_count_smells_and_cores_in_words() -> None:
    one = run(config_review, app_with({**CLUSTER, "spark.executor.cores": "1"}), P)
    assert one.title.startswith("1 configuration smell: spark.executor.cores (1 core is at or")
    two = run(
        config_review,
        app_with({**CLUSTER, "spark.executor.cores": "1", "spark.executor.memory": "200g"}),
        P,
    )
    assert two.title.startswith("3 configuration smells: ")


JAVA = {"spark.serializer": "org.apache.spark.serializer.JavaSerializer"}


@pytest.mark.parametrize(
    ("props", "stage_names", "expected"),
    [
        ({"spark.serializer": KRYO}, ("map at Job.scala:3",), None),
        # JVM code using the RDD API pays for Java serialization on every shuffle and cache
        ({}, ("reduceByKey at Job.scala:3", "collect at Job.scala:4"), Severity.MODERATE),
        (JAVA, ("distinct at Job.scala:27",), Severity.MODERATE),
        # Python RDDs hand the JVM pickled bytes (Spark picks Kryo for them): unset cannot matter
        ({}, ("reduceByKey at x.py:3", "collect at x.py:4"), None),
        ({"spark.submit.pyFiles": ""}, ("reduceByKey at Job.scala:3",), None),
        # ... and set explicitly it is listed as without effect here, LOW
        (JAVA, ("distinct at x.py:27",), Severity.LOW),
        # DataFrame/SQL work shuffles Spark's binary rows
        ({}, ("parquet at NativeMethodAccessorImpl.java:0", "collect at x.py:4"), None),
        ({}, ("$anonfun$withThreadLocalCaptured$2 at CompletableFuture.java:1768",), None),
        (
            JAVA,
            ("$anonfun$withThreadLocalCaptured$2 at CompletableFuture.java:1768",),
            Severity.LOW,
        ),
    ],
)
def test_serializer(props: dict, stage_names: tuple, expected: Severity | None) -> None:
    base = {k: v for k, v in CLUSTER.items() if k != "spark.serializer"}
    result = run(config_review, app_with({**base, **props}, stage_names), P)
    assert smells(result).get("spark.serializer") == expected
    if expected == Severity.MODERATE:
        assert ("spark.serializer", KRYO) in result.conf
    else:
        assert result.conf == ()


@pytest.mark.parametrize(
    ("props", "setting", "expected"),
    [
        (
            {
                "spark.dynamicAllocation.enabled": "true",
                "spark.dynamicAllocation.maxExecutors": "50",
            },
            None,
            None,
        ),
        (
            {
                "spark.dynamicAllocation.enabled": "true",
                "spark.dynamicAllocation.maxExecutors": "50",
                "spark.dynamicAllocation.shuffleTracking.enabled": "false",
            },
            "spark.dynamicAllocation.shuffleTracking.enabled",
            Severity.MODERATE,
        ),
        (
            {
                "spark.dynamicAllocation.enabled": "true",
                "spark.dynamicAllocation.maxExecutors": "50",
                "spark.dynamicAllocation.shuffleTracking.enabled": "false",
                "spark.shuffle.service.enabled": "true",
            },
            "spark.dynamicAllocation.shuffleTracking.enabled",
            None,
        ),
        (
            {"spark.dynamicAllocation.enabled": "true"},
            "spark.dynamicAllocation.maxExecutors",
            Severity.MODERATE,
        ),
        (
            {
                "spark.dynamicAllocation.enabled": "true",
                "spark.dynamicAllocation.maxExecutors": "1000",
            },
            "spark.dynamicAllocation.maxExecutors",
            None,
        ),
        (
            {
                "spark.dynamicAllocation.enabled": "true",
                "spark.dynamicAllocation.maxExecutors": "1001",
            },
            "spark.dynamicAllocation.maxExecutors",
            Severity.LOW,
        ),
        (
            {
                "spark.dynamicAllocation.enabled": "true",
                "spark.dynamicAllocation.maxExecutors": "5",
                "spark.dynamicAllocation.minExecutors": "10",
            },
            "spark.dynamicAllocation.minExecutors",
            Severity.MODERATE,
        ),
        (
            {"spark.dynamicAllocation.shuffleTracking.enabled": "false"},
            "spark.dynamicAllocation.shuffleTracking.enabled",
            None,
        ),
    ],
)
def test_dynamic_allocation(props: dict, setting: str | None, expected: Severity | None) -> None:
    found = smells(run(config_review, app_with({**CLUSTER, **props}), P))
    if setting is None:
        assert not any(k.startswith("spark.dynamicAllocation") for k in found)
    else:
        assert found.get(setting) == expected


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"spark.master": "yarn", "spark.yarn.queue": "etl"}, None),
        ({"spark.master": "yarn", "spark.yarn.queue": "default"}, Severity.LOW),
        ({"spark.master": "yarn"}, Severity.LOW),
        # set, but without effect outside YARN: listed as such, LOW
        ({"spark.master": "local[2]", "spark.yarn.queue": "default"}, Severity.LOW),
        ({"spark.master": "local[2]"}, None),
        ({"spark.master": "k8s://https://api:6443"}, None),
    ],
)
def test_yarn_queue(props: dict, expected: Severity | None) -> None:
    base = {k: v for k, v in CLUSTER.items() if k not in ("spark.master", "spark.yarn.queue")}
    assert (
        smells(run(config_review, app_with({**base, **props}), P)).get("spark.yarn.queue")
        == expected
    )


@pytest.mark.parametrize(
    ("setting", "value", "expected"),
    [
        ("spark.executor.memory", "15g", None),
        ("spark.executor.memory", "16g", Severity.LOW),
        ("spark.executor.memory", "32g", Severity.MODERATE),
        ("spark.executor.memory", "65536m", Severity.SEVERE),
        ("spark.executor.memory", "96g", Severity.CRITICAL),
        ("spark.executor.memoryOverhead", "4095m", None),
        ("spark.executor.memoryOverhead", "4g", Severity.LOW),
        ("spark.driver.memory", "8g", Severity.LOW),
        ("spark.driver.memory", "64g", Severity.CRITICAL),
        ("spark.driver.memoryOverhead", "2g", Severity.LOW),  # client mode: no effect here
        ("spark.executor.cores", "5", None),
        ("spark.executor.cores", "6", Severity.LOW),
        ("spark.executor.cores", "8", Severity.MODERATE),
        ("spark.executor.cores", "12", Severity.SEVERE),
        ("spark.executor.cores", "16", Severity.CRITICAL),
        ("spark.executor.cores", "2", None),
        ("spark.executor.cores", "1", Severity.LOW),
        ("spark.driver.cores", "3", None),
        ("spark.driver.cores", "4", Severity.LOW),
        ("spark.driver.cores", "32", Severity.CRITICAL),
    ],
)
def test_memory_and_cores(setting: str, value: str, expected: Severity | None) -> None:
    cluster_deploy = {**CLUSTER, "spark.submit.deployMode": "cluster"}
    found = smells(run(config_review, app_with({**cluster_deploy, setting: value}), P))
    assert found.get(setting) == expected


@pytest.mark.parametrize("setting", ["spark.driver.cores", "spark.driver.memoryOverhead"])
def test_driver_container_settings_apply_in_cluster_deploy_mode_only(setting: str) -> None:
    value = {"spark.driver.cores": "32", "spark.driver.memoryOverhead": "32g"}[setting]
    client = run(config_review, app_with({**CLUSTER, setting: value}), P)
    assert inert(client) == {setting} and client.severity == Severity.LOW
    cluster = run(
        config_review,
        app_with({**CLUSTER, setting: value, "spark.submit.deployMode": "cluster"}),
        P,
    )
    assert inert(cluster) == set() and cluster.severity == Severity.CRITICAL
    # unset, the default is never judged outside cluster deploy mode
    assert run(config_review, app_with(CLUSTER), P).severity == Severity.NONE


def test_overhead_default_follows_memory() -> None:
    # 48g executor memory -> default overhead 4.8 GiB, above the 4 GiB limit
    found = smells(run(config_review, app_with({**CLUSTER, "spark.executor.memory": "48g"}), P))
    assert found["spark.executor.memoryOverhead"] == Severity.LOW


def test_unset_executor_cores_on_yarn_defaults_to_one() -> None:
    props = {k: v for k, v in CLUSTER.items() if k != "spark.executor.cores"}
    assert (
        smells(run(config_review, app_with(props), P)).get("spark.executor.cores") == Severity.LOW
    )


def test_unset_executor_settings_are_not_judged_in_local_mode() -> None:
    props = {"spark.master": "local[2]", "spark.serializer": KRYO}
    assert run(config_review, app_with(props), P).severity == Severity.NONE


LEGACY = {
    "spark.master": "local[2]",
    "spark.driver.memory": "2g",
    "spark.dynamicAllocation.enabled": "true",
    "spark.dynamicAllocation.shuffleTracking.enabled": "false",
    "spark.dynamicAllocation.maxExecutors": "200",
    "spark.shuffle.service.enabled": "false",
    "spark.yarn.queue": "default",
    "spark.executor.memory": "120g",
    "spark.executor.cores": "32",
}


def test_legacy_job_in_local_mode_lists_its_settings_without_effect() -> None:
    """The legacy job ran in local mode: its cluster settings take no effect there. They are
    listed (a copied job configuration will meet a cluster), capped to LOW by their cost of 0 s,
    with the pattern severity they have where they take effect."""
    result = run(
        config_review,
        app_with(LEGACY, ("collect at config_smells.py:24", "distinct at config_smells.py:27")),
        P,
    )
    found = smells(result)
    assert found == {
        "spark.dynamicAllocation.shuffleTracking.enabled": Severity.LOW,
        "spark.yarn.queue": Severity.LOW,
        "spark.executor.memory": Severity.LOW,
        "spark.executor.cores": Severity.LOW,
    }
    assert inert(result) == set(found)
    assert (result.pattern_severity, result.severity) == (Severity.CRITICAL, Severity.LOW)
    assert (
        result.cap_note() == "CRITICAL pattern, capped to LOW by its cost of 0 s and 0 core-hours"
    )
    assert result.value == 4
    assert "take no effect in local mode" in result.advice
    assert result.conf == ()  # nothing to set for the next run in local mode


def test_the_same_settings_on_a_cluster_keep_their_severity() -> None:
    props = {**LEGACY, "spark.master": "yarn"}
    result = run(
        config_review, app_with(props, ("distinct at Job.scala:27", "collect at Job.scala:24")), P
    )
    found = smells(result)
    assert found == {
        "spark.serializer": Severity.MODERATE,
        "spark.dynamicAllocation.shuffleTracking.enabled": Severity.MODERATE,
        "spark.yarn.queue": Severity.LOW,
        "spark.executor.memory": Severity.CRITICAL,
        "spark.executor.memoryOverhead": Severity.MODERATE,  # its default: 10% of 120g
        "spark.executor.cores": Severity.CRITICAL,
    }
    assert result.severity == Severity.CRITICAL and result.cost_cap is None
    assert result.impact is not None and result.impact.core_hours is None
    assert "KryoSerializer" in result.advice
    assert dict(result.conf) == {
        "spark.serializer": KRYO,
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.executor.cores": "5",
        # 120g for 32 cores is 3.75g a core: 5 cores keep it in 19g
        "spark.executor.memory": "19g",
    }


def test_fewer_cores_per_executor_keep_the_capacity() -> None:
    props = {
        **CLUSTER,
        "spark.executor.cores": "16",
        "spark.executor.memory": "64g",
        "spark.executor.instances": "10",
    }
    result = run(config_review, app_with(props), P)
    assert dict(result.conf) == {
        "spark.executor.cores": "5",
        "spark.executor.memory": "20g",
        "spark.executor.instances": "32",  # 160 task slots, as before
    }


def test_settings_that_apply_decide_the_severity_beside_ones_that_do_not() -> None:
    props = {"spark.master": "local[2]", "spark.driver.memory": "32g", "spark.executor.cores": "32"}
    result = run(config_review, app_with(props), P)
    # the local driver runs the tasks: judged by the executor limits, 32g is MODERATE
    assert smells(result) == {"spark.driver.memory": Severity.MODERATE, "spark.executor.cores": 1}
    assert inert(result) == {"spark.executor.cores"}
    assert result.severity == Severity.MODERATE
    # a workstation-sized driver in local mode is no smell
    laptop = {"spark.master": "local[8]", "spark.driver.memory": "12g"}
    assert run(config_review, app_with(laptop), P).severity == Severity.NONE


def test_is_sql_only() -> None:
    assert config_review.is_sql_only(
        app_with(CLUSTER, ("parquet at NativeMethodAccessorImpl.java:0",))
    )
    assert not config_review.is_sql_only(app_with(CLUSTER, ("parallelize at x.py:1",)))
