"""Database problems (unreachable server, refused login, missing database or file, schema not
migrated or older than the code) give one line naming the database and the fix, exit code 2 and no
traceback in every command, and a 503 page (JSON under /api/) in the web app; PostgreSQL URLs of
either form work."""

from __future__ import annotations

import html
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from click.testing import CliRunner
from sqlalchemy import text
from sqlalchemy.engine import make_url

from sparkscope import migrate
from sparkscope.cli.main import cli
from sparkscope.db import make_engine
from tests.conftest import create_pg_database, drop_pg_database
from tests.sparkscope.web.conftest import make_app

DEMO = Path(__file__).resolve().parents[2] / "demo" / "spark-events"
HINT = "(database_url in the config, or SPARKSCOPE_DATABASE_URL)"
LOGIN_ROLE = "sparkscope_login"  # scripts/pg-start.sh makes this role give its password
# Every command that opens the database (dump and schedule never do).
COMMANDS = [["analyze"], ["fetch", "--url", str(DEMO), "--limit", "1"], ["serve", "--port", "1"]]
DB_COMMANDS = [["db", "upgrade"], ["db", "current"], ["db", "check"]]


def unreachable(shown: str) -> str:
    return (
        f"cannot reach the database server of {shown} (Connection refused): start it, or fix the "
        f"host and port {HINT}"
    )


def refused_login(shown: str) -> str:
    return (
        f"the database server refused the login of {shown} (password authentication failed for "
        f'user "{LOGIN_ROLE}"): fix the user name or password {HINT}'
    )


def missing_database(name: str, url: str) -> str:
    return (
        f'database "{name}" does not exist on the server of {make_url(url)}: create it '
        f"(e.g. createdb {name}) and run `sparkscope db upgrade`, or fix the URL {HINT}"
    )


def not_migrated(url: str) -> str:
    return f"the database at {make_url(url)} has no Sparkscope tables: run `sparkscope db upgrade`"


def older(url: str, revision: str) -> str:
    (head,) = migrate.code_heads()
    return (
        f"the database at {make_url(url)} is at schema revision {revision}, older than this "
        f"version of Sparkscope needs ({head}): run `sparkscope db upgrade`"
    )


def missing_file(url: str) -> str:
    return (
        f"the SQLite database {url} does not exist: run `sparkscope db upgrade` (it creates it), "
        f"or fix the URL {HINT}"
    )


def older_revision() -> str:
    """The revision just below the migrations' head."""
    script = ScriptDirectory(str(migrate.MIGRATIONS_DIR))
    (head,) = script.get_heads()
    down = script.get_revision(head).down_revision
    assert isinstance(down, str)
    return down


def run(url: str, args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", url)
    monkeypatch.delenv("SPARKSCOPE_CONFIG", raising=False)
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.stdout, result.stderr


def assert_one_line(
    url: str, args: list[str], expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(url, args, monkeypatch)
    assert (code, err) == (2, f"sparkscope: {expected}\n"), (args, out, err)
    assert "Traceback" not in out + err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def empty_pg_url(pg_server_url: str) -> Iterator[str]:
    """A PostgreSQL database without any table."""
    url = create_pg_database(pg_server_url)
    yield url
    drop_pg_database(pg_server_url, url)


@pytest.fixture
def login_role(pg_server_url: str) -> str:
    """A role that must give its password (``right``); skips on a server that trusts it anyway."""
    admin = make_engine(pg_server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        exists = conn.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": LOGIN_ROLE})
        verb = "ALTER" if exists.first() else "CREATE"
        conn.execute(text(f"{verb} ROLE {LOGIN_ROLE} LOGIN PASSWORD 'right'"))
    admin.dispose()
    wrong = make_url(pg_server_url).set(username=LOGIN_ROLE, password="wrong")
    probe = make_engine(wrong)
    try:
        with probe.connect():
            pytest.skip("this PostgreSQL trusts every login (not one started by pg-start.sh)")
    except Exception as exc:  # the refusal this test wants
        if "password authentication failed" not in str(exc):
            raise
    finally:
        probe.dispose()
    return wrong.render_as_string(hide_password=False)


# ------------------------------------------------------------------------------ command line


@pytest.mark.parametrize("args", COMMANDS + DB_COMMANDS, ids=" ".join)
def test_unreachable_postgres(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"postgresql://sparkscope:s3cret@127.0.0.1:{closed_port()}/sparkscope"
    assert_one_line(url, args, unreachable(url.replace("s3cret", "***")), monkeypatch)


@pytest.mark.parametrize("args", COMMANDS + DB_COMMANDS[:1], ids=" ".join)
def test_wrong_password(args: list[str], login_role: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = refused_login(login_role.replace(":wrong@", ":***@"))
    assert_one_line(login_role, args, expected, monkeypatch)


@pytest.mark.parametrize("args", COMMANDS + DB_COMMANDS[:1], ids=" ".join)
def test_missing_postgres_database(
    args: list[str], pg_server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"missing_{uuid.uuid4().hex[:8]}"
    url = make_url(pg_server_url).set(database=name).render_as_string(hide_password=False)
    assert_one_line(url, args, missing_database(name, url), monkeypatch)


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_postgres_not_migrated(
    args: list[str], empty_pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_one_line(empty_pg_url, args, not_migrated(empty_pg_url), monkeypatch)


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_postgres_schema_older_than_code(
    args: list[str], empty_pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    revision = older_revision()
    migrate.upgrade(empty_pg_url, revision)
    assert_one_line(empty_pg_url, args, older(empty_pg_url, revision), monkeypatch)
    # and the fix it names works
    assert run(empty_pg_url, ["db", "upgrade"], monkeypatch)[0] == 0
    assert run(empty_pg_url, ["analyze"], monkeypatch)[0] == 0


@pytest.mark.parametrize("args", [["analyze"], ["serve", "--port", "1"]], ids=" ".join)
def test_sqlite_file_missing_is_not_created(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sub" / "sparkscope.db"
    url = f"sqlite:///{path}"
    assert_one_line(url, args, missing_file(url), monkeypatch)
    assert not path.exists()


@pytest.mark.parametrize("args", [["analyze"], ["serve", "--port", "1"]], ids=" ".join)
def test_sqlite_not_migrated_and_older(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'sparkscope.db'}"
    (tmp_path / "sparkscope.db").touch()  # an empty file
    assert_one_line(url, args, not_migrated(url), monkeypatch)
    revision = older_revision()
    migrate.upgrade(url, revision)
    assert_one_line(url, args, older(url, revision), monkeypatch)


def test_fetch_sets_up_the_embedded_sqlite_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'new' / 'sparkscope.db'}"
    code, out, err = run(url, ["fetch", "--url", str(DEMO), "--limit", "1"], monkeypatch)
    assert code == 0, (out, err)
    assert migrate.database_problem(url) is None


def test_db_upgrade_on_a_database_newer_than_the_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'sparkscope.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'f00d'"))
    engine.dispose()
    (head,) = migrate.code_heads()
    expected = (
        f"the database at {url} is at schema revision f00d, newer than this version of Sparkscope "
        f"knows (it needs {head}): upgrade Sparkscope"
    )
    assert_one_line(url, ["analyze"], expected, monkeypatch)
    assert_one_line(
        url, ["db", "upgrade"], f"{url}: Can't locate revision identified by 'f00d'", monkeypatch
    )


# -------------------------------------------------------------------------------- PostgreSQL URLs


@pytest.mark.parametrize("scheme", ["postgresql", "postgresql+psycopg2", "postgres"])
def test_every_postgres_url_form_works(
    scheme: str, empty_pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = make_url(empty_pg_url).set(drivername=scheme).render_as_string(hide_password=False)
    assert url.startswith(f"{scheme}://")
    code, out, err = run(url, ["db", "upgrade"], monkeypatch)
    assert code == 0, err
    assert out == f"database at head: {url}\n"
    code, out, err = run(url, ["fetch", "--url", str(DEMO), "--limit", "2"], monkeypatch)
    assert code == 0, err
    assert "total: loaded 2 applications" in out
    engine = make_engine(url)
    assert engine.dialect.driver == "psycopg"
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM application")).scalar() == 2
    engine.dispose()


# ---------------------------------------------------------------------------------------- web app

PAGES = ["/", "/search", "/history", "/apps/nope"]


def assert_503(url: str, expected: str) -> None:
    app = make_app(url)
    client = app.test_client()
    for page in PAGES:
        resp = client.get(page)
        assert resp.status_code == 503, page
        assert resp.headers["Retry-After"] == "30"
        body = html.unescape(resp.get_data(as_text=True))
        assert "Database unavailable" in body and expected in body, page
    api = client.get("/api/apps")
    assert api.status_code == 503
    assert api.get_json() == {"error": "Database unavailable", "message": expected, "status": 503}
    # Plotly's script and the static files need no database.
    for static in ("/static/js/plotly.min.js", "/static/css/sparkscope.css"):
        with client.get(static) as resp:
            assert resp.status_code == 200, static
    app.extensions["sparkscope.engine"].dispose()


def test_web_unreachable_and_missing_postgres(pg_server_url: str) -> None:
    url = f"postgresql://sparkscope:s3cret@127.0.0.1:{closed_port()}/sparkscope"
    assert_503(url, unreachable(url.replace("s3cret", "***")))
    url = make_url(pg_server_url).set(database="missing_db").render_as_string(hide_password=False)
    assert_503(url, missing_database("missing_db", url))


def test_web_wrong_password(login_role: str) -> None:
    assert_503(login_role, refused_login(login_role.replace(":wrong@", ":***@")))


def test_web_not_migrated_then_upgraded(empty_pg_url: str) -> None:
    app = make_app(empty_pg_url)
    client = app.test_client()
    resp = client.get("/")
    assert resp.status_code == 503
    assert not_migrated(empty_pg_url) in html.unescape(resp.get_data(as_text=True))
    migrate.upgrade(empty_pg_url)
    assert client.get("/").status_code == 200  # seen at the next request, no restart
    app.extensions["sparkscope.engine"].dispose()


def test_web_schema_older_than_code(empty_pg_url: str, tmp_path: Path) -> None:
    revision = older_revision()
    migrate.upgrade(empty_pg_url, revision)
    assert_503(empty_pg_url, older(empty_pg_url, revision))
    sqlite_url = f"sqlite:///{tmp_path / 'old.db'}"
    migrate.upgrade(sqlite_url, revision)
    assert_503(sqlite_url, older(sqlite_url, revision))
    sqlite_url = f"sqlite:///{tmp_path / 'empty.db'}"
    make_engine(sqlite_url).dispose()
    (tmp_path / "empty.db").touch()
    assert_503(sqlite_url, not_migrated(sqlite_url))


def test_web_never_creates_a_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    url = f"sqlite:///{path}"
    assert_503(url, missing_file(url))
    assert not path.exists()
    assert not list(tmp_path.iterdir())
