"""Real-world secret shapes, table-driven: where each appears, the text, what must be masked and
what must survive. Spark properties go through ``redact`` (as the fetcher stores them and the
pages show them), the command line and error texts through ``redact_text`` (in place)."""

from __future__ import annotations

import re
import time
from typing import NamedTuple

import pytest

from sparkscope.config.settings import DEFAULT_REDACTION_REGEX
from sparkscope.redaction import PATTERNS, REDACTED, redact, redact_text

PATTERN = re.compile(DEFAULT_REDACTION_REGEX)
AZURE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


class Shape(NamedTuple):
    where: str  # "property" (name), "command" (sun.java.command) or "error" (free text)
    name: str
    text: str
    masked: tuple[str, ...]  # substrings that must be gone
    kept: tuple[str, ...] = ()  # substrings that must survive


SHAPES = [
    # --- Spark properties: the key names the secret, the whole value goes ---------------------
    Shape(
        "property",
        "spark.hadoop.fs.azure.account.key.acme.dfs.core.windows.net",
        AZURE_KEY,
        (AZURE_KEY[:20],),
    ),
    Shape(
        "property",
        "spark.hadoop.fs.azure.sas.logs.acme.blob.core.windows.net",
        "sv=2021-06-08&ss=b&srt=co&sp=rl&sig=abcdEFGH%2Bijkl%3D",
        ("abcdEFGH", "sv=2021"),
    ),
    Shape(
        "property",
        "spark.hadoop.fs.azure.account.oauth2.client.secret.acme.dfs.core.windows.net",
        "7Q~p8Fz.abc-secretvalue",
        ("7Q~p8Fz",),
    ),
    Shape("property", "spark.hadoop.fs.s3a.access.key", "AKIAIOSFODNN7EXAMPLE", ("AKIAIOSFODNN7",)),
    Shape(
        "property",
        "spark.hadoop.fs.s3a.secret.key",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCY",
        ("wJalrXUtnFEMI",),
    ),
    Shape(
        "property",
        "spark.hadoop.fs.s3a.session.token",
        "FwoGZXIvYXdzEJr//////////wEaDM",
        ("FwoGZXIvYXdz",),
    ),
    Shape(
        "property", "spark.hadoop.fs.s3a.bucket.sales.secret.key", "Zm9vYmFyYmF6cXV4", ("Zm9vYmFy",)
    ),
    Shape("property", "spark.hadoop.fs.gs.auth.service.account.private.key", PEM, ("MIIEvQIB",)),
    Shape(
        "property",
        "spark.hadoop.fs.gs.auth.service.account.private.key.id",
        "1a2b3c4d5e6f7a8b9c0d",
        ("1a2b3c4d5e",),
    ),
    Shape(
        "property",
        "spark.kafka.sasl.jaas.config",
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
        'password="alice-secret";',
        ("alice-secret",),
    ),
    Shape("property", "spark.snowflake.sfPassword", "Sn0wfl@ke!", ("Sn0wfl@ke",)),
    Shape(
        "property",
        "spark.datasource.jdbc.url",
        "jdbc:postgresql://db.internal:5432/sales?user=etl&password=hunter2",
        ("hunter2",),
    ),
    Shape("property", "spark.executorEnv.GITHUB_TOKEN", "ghp_" + "a1" * 18, ("ghp_a1a1",)),
    Shape(
        "property",
        "spark.executorEnv.AWS_SECRET_ACCESS_KEY",
        "wJalrXUtnFEMIK7MDENG",
        ("wJalrXUtn",),
    ),
    Shape("property", "spark.yarn.appMasterEnv.DATABASE_PASSWORD", "pg-pass-1", ("pg-pass-1",)),
    Shape("property", "spark.ssl.keyStorePassword", "changeit", ("changeit",)),
    Shape("property", "spark.authenticate.secret", "s3cr3t-shared", ("s3cr3t-shared",)),
    # --- Spark properties whose key says nothing: the secret part of the value goes -------------
    Shape(
        "property",
        "spark.custom.warehouse",
        "jdbc:mysql://etl:hunter2@db.internal:3306/sales",
        ("hunter2",),
        ("jdbc:mysql://", "@db.internal:3306/sales"),
    ),
    Shape(
        "property",
        "spark.eventLog.dir",
        "s3a://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI%2FK7MDENG@spark-logs/events",
        ("wJalrXUtnFEMI", "AKIAIOSFODNN7"),
        ("s3a://", "@spark-logs/events"),
    ),
    Shape(
        "property",
        "spark.custom.databricks",
        "dapi0123456789abcdef0123456789abcdef",
        ("dapi0123456789",),
    ),
    # --- values that are not secrets survive ---------------------------------------------------
    Shape("property", "spark.executor.memory", "4g", (), ("4g",)),
    Shape(
        "property",
        "spark.eventLog.dir",
        "wasbs://logs@acme.blob.core.windows.net/spark",
        (),
        ("wasbs://logs@acme.blob.core.windows.net/spark",),
    ),
    Shape(
        "property",
        "spark.hadoop.google.cloud.auth.service.account.json.keyfile",
        "/etc/gcs/sa.json",
        (),
        ("/etc/gcs/sa.json",),
    ),
    # --- the command line: arguments stay, secrets go ------------------------------------------
    Shape(
        "command",
        "sun.java.command",
        "org.apache.spark.deploy.SparkSubmit --conf spark.hadoop.fs.s3a.secret.key=wJalrXUtnFE "
        "--class etl.Main app.jar 2024-05-01 --password hunter2 "
        "--db-url jdbc:postgresql://etl:s3cret@db/x -Djavax.net.ssl.trustStorePassword=changeit",
        ("wJalrXUtnFE", "hunter2", "s3cret", "changeit"),
        ("--class etl.Main app.jar 2024-05-01", "@db/x", "--password "),
    ),
    Shape(
        "command",
        "sun.java.command",
        "org.apache.spark.deploy.SparkSubmit --conf spark.api.token=dapi0123456789abcdef0123456789abcdef"
        " job.py --date 2024-05-01 --rows 1000",
        ("dapi0123456789",),
        ("job.py --date 2024-05-01 --rows 1000",),
    ),
    # --- error texts (task and stage failure messages) -----------------------------------------
    Shape(
        "error",
        "task",
        "Failed to connect to jdbc:postgresql://db:5432/x?user=etl&password=hunter2"
        "\n\tat org.postgresql.Driver.connect(Driver.java:285)",
        ("hunter2",),
        ("user=etl", "db:5432", "Driver.java:285"),
    ),
    Shape(
        "error",
        "task",
        "java.io.IOException: Server returned HTTP response code: 403 for URL: "
        "https://admin:hunter2@shs.internal:18080/api/v1",
        ("hunter2", "admin:"),
        ("shs.internal:18080/api/v1", "response code: 403"),
    ),
    Shape(
        "error",
        "stage",
        "org.apache.kafka.common.KafkaException: Failed to construct kafka "
        "consumer, sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
        'required username="svc" password="Kafka-Secret-1";',
        ("Kafka-Secret-1",),
        ("ScramLoginModule", 'username="svc"'),
    ),
    Shape(
        "error",
        "task",
        "AmazonS3Exception: The AWS Access Key Id you provided does not exist "
        "(Service: Amazon S3; Status Code: 403; Error Code: InvalidAccessKeyId; key "
        "AKIAIOSFODNN7EXAMPLE)",
        ("AKIAIOSFODNN7EXAMPLE",),
        ("InvalidAccessKeyId", "403"),
    ),
    Shape(
        "error",
        "task",
        f"401 Unauthorized: header Authorization: Bearer {JWT}",
        (JWT[:20], "dozjgNryP4"),
        ("401 Unauthorized",),
    ),
    Shape(
        "error",
        "task",
        "proxy refused: Authorization: Basic YWRtaW46aHVudGVyMg==",
        ("YWRtaW46aHVudGVyMg",),
        ("proxy refused",),
    ),
    Shape(
        "error",
        "task",
        "Invalid access token dapi0123456789abcdef0123456789abcdef-2 for "
        "https://adb-123.azuredatabricks.net",
        ("dapi0123456789",),
        ("adb-123.azuredatabricks.net",),
    ),
    Shape(
        "error",
        "stage",
        "posting to https://hooks.slack.com/services/T0000AAAA/B0000BBBB/"
        "XXXXXXXXXXXXXXXXXXXXXXXX failed",
        ("XXXXXXXXXXXX", "T0000AAAA"),
        ("failed",),
    ),
    Shape(
        "error",
        "task",
        "git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/acme/etl failed",
        ("ghp_abcdefghij",),
        ("github.com/acme/etl",),
    ),
    Shape(
        "error",
        "task",
        "slack: xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx revoked",
        ("AbCdEfGhIjKl",),
        ("revoked",),
    ),
    Shape(
        "error",
        "task",
        '{"type": "service_account", "project_id": "my-proj", "private_key_id": '
        f'"1a2b3c4d5e6f", "private_key": "{PEM.replace(chr(10), chr(92) + "n")}", '
        '"client_email": "sa@my-proj.iam.gserviceaccount.com"}',
        ("1a2b3c4d5e6f", "MIIEvQIB"),
        ('"project_id": "my-proj"', "sa@my-proj.iam"),
    ),
    Shape(
        "error",
        "task",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey="
        f"{AZURE_KEY};EndpointSuffix=core.windows.net",
        (AZURE_KEY[:20],),
        ("AccountName=acme", "EndpointSuffix=core.windows.net"),
    ),
    Shape(
        "error",
        "task",
        "403 on https://acme.blob.core.windows.net/c/b?sv=2021-06-08&sr=b&sp=r"
        "&sig=abcdEFGH%2Bijkl%3D",
        ("abcdEFGH",),
        ("acme.blob.core.windows.net/c/b", "sp=r"),
    ),
    Shape(
        "error",
        "task",
        "ORA-01017: invalid login, jdbc:oracle:thin:scott/tiger@db:1521/ORCL",
        ("tiger",),
        ("scott/", "@db:1521/ORCL", "ORA-01017"),
    ),
    Shape(
        "error",
        "task",
        "jdbc:sqlserver://db:1433;databaseName=sales;user=etl;password=Hunter2!",
        ("Hunter2",),
        ("databaseName=sales", "user=etl"),
    ),
    Shape(
        "error",
        "task",
        "SnowflakeSQLException: login failed, sfURL=acme.snowflakecomputing.com, "
        "sfUser=etl, sfPassword=Sn0w!",
        ("Sn0w!",),
        ("acme.snowflakecomputing.com", "sfUser=etl"),
    ),
    Shape(
        "error",
        "task",
        "MongoTimeoutException: mongodb+srv://app:m0ng0pass@cluster0.mongodb.net/db",
        ("m0ng0pass",),
        ("cluster0.mongodb.net/db",),
    ),
    Shape(
        "error",
        "task",
        "redis://:redispass@cache:6379/0 refused",
        ("redispass",),
        ("cache:6379/0 refused",),
    ),
    Shape(
        "error",
        "task",
        "GET https://api.example.com/v1?token=abc123def456&page=2 failed",
        ("abc123def456",),
        ("page=2", "api.example.com/v1"),
    ),
    Shape(
        "error",
        "task",
        "bad key AIzaSyA-1234567890abcdefghijklmnopqrstu for maps",
        ("AIzaSyA-12345",),
        ("for maps",),
    ),
    Shape(
        "error",
        "task",
        "config: <password>hunter2</password><user>etl</user>",
        ("hunter2",),
        ("<user>etl</user>",),
    ),
    Shape("error", "task", "password: hunter2\nusername: etl", ("hunter2",), ("username: etl",)),
    Shape(
        "error",
        "task",
        'org.postgresql.util.PSQLException: FATAL: password authentication failed for user "etl"',
        (),
        ("FATAL: password authentication failed",),
    ),
]


def test_there_are_at_least_30_shapes() -> None:
    assert len(SHAPES) >= 30
    assert {s.where for s in SHAPES} == {"property", "command", "error"}


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s.where}:{s.name}:{s.text[:30]}")
def test_each_secret_shape_is_masked_and_its_context_kept(shape: Shape) -> None:
    if shape.where == "error":
        out = redact_text(shape.text, PATTERN)
    else:
        out = redact(shape.name, shape.text, PATTERN)
    assert out is not None
    for secret in shape.masked:
        assert secret not in out, out
    if shape.masked:
        assert REDACTED in out
    else:
        assert out == shape.text
    for context in shape.kept:
        assert context in out, out


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_no_pattern_is_slow_on_hostile_text(name: str) -> None:
    # The characters each pattern hinges on, repeated; 100,000 characters is the longest stored
    # text (a stage's failure reason).
    seeds = ["a", "a=", "a:", "-a ", "<a>", "a://a:", "eyJ", "-----BEGIN PRIVATE KEY-----", '"a":"',
             "'a':'", "Authorization: ", "bearer ", "a=\"", "jdbc:oracle:thin:a/"]  # fmt: skip
    for seed in seeds:
        text = (seed * (100_000 // len(seed) + 1))[:100_000]
        start = time.perf_counter()
        PATTERNS[name].sub("", text)
        assert time.perf_counter() - start < 2.0, (name, seed)
