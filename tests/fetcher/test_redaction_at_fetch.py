"""Secrets in what the History Server serves -- error texts, descriptions, the command line --
are masked before anything is stored, rows and raw JSON alike; the rest of each text survives."""

from __future__ import annotations

import copy
import json
from typing import Any

from sqlalchemy import select

from fetcher.job import run_server
from fetcher.options import FetchOptions
from sparkscope.config.loader import FetcherConfig
from sparkscope.models.application import EnvironmentProperty, Executor, Job, Stage, Task
from tests.fetcher import recorded
from tests.fetcher.conftest import SERVER
from tests.fetcher.recorded import BILLING

FETCHER_CONFIG = FetcherConfig(threads=1, retries=0, backoff_factor_s=0)
SECRETS = ("hunter2", "Kafka-Pass-9", "AKIAIOSFODNN7EXAMPLE", "ghp_" + "x1" * 18, "s3cr3tpw")


def _with_secrets(key: str, data: Any) -> Any:
    data = copy.deepcopy(data)
    path = key.partition("?")[0]

    def tasks(items: Any) -> None:
        for t in items:
            if t.get("errorMessage"):
                t["errorMessage"] = (
                    "java.sql.SQLException: cannot reach "
                    "jdbc:postgresql://db.internal:5432/x?user=etl&password=hunter2\n"
                    + t["errorMessage"]
                )

    if path.endswith("/environment"):
        data["systemProperties"] = [
            p for p in data["systemProperties"] if p[0] != "sun.java.command"
        ] + [
            [
                "sun.java.command",
                "org.apache.spark.deploy.SparkSubmit --class etl.Billing billing.jar "
                "2024-05-01 --password s3cr3tpw --rows 1000",
            ]
        ]
    elif path.endswith("/allexecutors"):
        for e in data:
            e["removeReason"] = "lost: credentials AKIAIOSFODNN7EXAMPLE expired"
    elif path.endswith("/jobs"):
        for j in data:
            j["description"] = f"load via https://{'ghp_' + 'x1' * 18}@github.com/acme/etl"
    elif path.endswith("/stages"):
        for s in data:
            if s.get("status") == "FAILED":
                s["failureReason"] = (
                    'sasl.jaas.config=ScramLoginModule required username="svc" '
                    'password="Kafka-Pass-9"; ' + (s.get("failureReason") or "")
                )
    elif path.endswith("/taskList"):
        tasks(data)
    elif isinstance(data, dict) and isinstance(data.get("tasks"), dict):
        tasks(data["tasks"].values())
    return data


def test_secrets_in_served_texts_are_masked_before_storing(rsps, factory) -> None:
    recorded.register_listing(rsps, [BILLING])
    recorded.register_app(rsps, BILLING, transform=_with_secrets)
    result = run_server(factory, SERVER, FETCHER_CONFIG, FetchOptions())
    assert (result.loaded, result.failed) == (1, [])
    with factory() as s:
        command = s.scalar(
            select(EnvironmentProperty.value).where(EnvironmentProperty.name == "sun.java.command")
        )
        execs = s.scalars(select(Executor)).all()
        jobs = s.scalars(select(Job)).all()
        stages = s.scalars(select(Stage)).all()
        tasks = [t for t in s.scalars(select(Task)).all() if t.error_message]
        stored = json.dumps(
            [command]
            + [(e.remove_reason, e.raw) for e in execs]
            + [(j.description, j.raw) for j in jobs]
            + [(st.failure_reason, st.raw) for st in stages]
            + [(t.error_message, t.raw) for t in tasks]
        )
    assert tasks and any(st.failure_reason for st in stages)
    for secret in SECRETS:
        assert secret not in stored, secret
    # What is not a secret stays: the arguments the predictions read, the causes, the hosts.
    assert command is not None
    assert "--class etl.Billing billing.jar 2024-05-01" in command and "--rows 1000" in command
    assert all(
        "user=etl" in t.error_message and "db.internal:5432" in t.error_message for t in tasks
    )
    assert all("github.com/acme/etl" in (j.description or "") for j in jobs)
    assert any('username="svc"' in (st.failure_reason or "") for st in stages)
