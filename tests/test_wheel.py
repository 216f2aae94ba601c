"""The built wheel works outside the checkout: build it from the files the Dockerfile copies, install
it into a new virtualenv in a temporary folder, and from another folder set up SQLite, fetch the
recorded demo server, analyse, serve every kind of page, and migrate a PostgreSQL database given by a
plain postgresql:// URL.

The new virtualenv reaches the dependencies through a .pth line naming this interpreter's
site-packages (installing them again would take minutes); the checkout itself is never on its
sys.path, and the test asserts that.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from sparkscope import migrate
from sparkscope.db import make_engine
from tests.conftest import create_pg_database, drop_pg_database

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parent.parent
#: What building the wheel needs: the Dockerfile copies exactly these (tests/test_deploy.py).
BUILD_INPUTS = (
    "pyproject.toml",
    "setup.py",
    "README.md",
    "sparkscope",
    "fetcher",
    "heuristics",
    "templates",
    "static",
    "migrations",
    "config",
)
DEMO = ROOT / "demo" / "spark-events"


class Venv:
    """A fresh virtualenv holding only the wheel; commands run in ``cwd`` with ``env``."""

    def __init__(self, path: Path, cwd: Path, env: dict[str, str]) -> None:
        self.path = path
        self.cwd = cwd
        self.env = env

    def bin(self, name: str) -> str:
        return str(self.path / "bin" / name)

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            args,
            cwd=self.cwd,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr, result.stderr
        return result


def _build_wheel(tmp: Path) -> Path:
    src = tmp / "src"
    for name in BUILD_INPUTS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            src.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, src / name)
    dist = tmp / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(src)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = dist.glob("sparkscope-*.whl")
    return wheel


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    tmp = tmp_path_factory.mktemp("wheel")
    assert ROOT not in tmp.parents
    wheel = _build_wheel(tmp)
    path = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "SPARKSCOPE_"))}
    env["PATH"] = f"{path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(path / "bin" / "python"),
            "install",
            "--quiet",
            "--no-deps",
            "--no-compile",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        env=env,
        timeout=300,
    )
    # the dependencies: this interpreter's site-packages (not the checkout, nor the .pth files there)
    deps = sorted({p for p in site.getsitepackages() if Path(p).is_dir()})
    purelib = subprocess.run(
        [
            str(path / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "_test_dependencies.pth").write_text("\n".join(deps) + "\n")
    cwd = tmp / "elsewhere"
    cwd.mkdir()
    env["SPARKSCOPE_DATA_DIR"] = str(tmp / "data")
    return Venv(path, cwd, env)


def test_the_checkout_is_not_importable_in_the_venv(venv: Venv) -> None:
    out = venv.run(
        venv.bin("python"),
        "-c",
        "import json, sys, sparkscope, fetcher, heuristics\n"
        "from sparkscope import assets\nfrom sparkscope.config import loader as config\n"
        "print(json.dumps({'path': sys.path, 'modules': [sparkscope.__file__, fetcher.__file__,"
        " heuristics.__file__], 'assets': [str(assets.folder(n)) for n in assets.FOLDERS],"
        " 'heuristics': config.load_config().heuristics_path, 'plotly': str(assets.plotly_js())}))",
    ).stdout
    found = json.loads(out)
    site_packages = venv.path / "lib"
    for entry in found["path"]:
        assert not entry or Path(entry).resolve() != ROOT, entry
        # the shared dependencies may live in a virtualenv inside the checkout (make check's .venv),
        # never the checkout's own code folders
        inside = Path(entry).resolve().is_relative_to(ROOT) if entry else False
        assert not inside or Path(entry).resolve().is_relative_to(Path(sys.prefix).resolve()), entry
    for module in found["modules"] + found["assets"] + [found["heuristics"]]:
        assert Path(module).is_relative_to(site_packages), module
    assert found["assets"][0].endswith("sparkscope/_templates")
    assert Path(found["plotly"]).is_file()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return int(exc.code), exc.read()


@pytest.fixture
def server(
    venv: Venv, request: pytest.FixtureRequest
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Start the command given by the test's parameter on a free port; stop it afterwards."""
    port = _free_port()
    argv = [a.replace("PORT", str(port)) for a in request.param]
    proc = subprocess.Popen(
        [venv.bin(argv[0]), *argv[1:]],
        cwd=venv.cwd,
        env=venv.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.2)
    try:
        assert proc.poll() is None, proc.communicate()[0]
        yield base, proc
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_sqlite_upgrade_fetch_analyze(venv: Venv) -> None:
    db = Path(venv.env["SPARKSCOPE_DATA_DIR"]) / "sparkscope.db"
    assert not db.exists()
    out = venv.run(venv.bin("sparkscope"), "db", "upgrade").stdout
    assert out == f"database at head: sqlite:///{db}\n"
    out = venv.run(venv.bin("sparkscope"), "fetch", "--url", str(DEMO)).stdout
    assert "total: loaded 21 applications" in out
    out = venv.run(venv.bin("sparkscope"), "analyze", "--force", "--workers", "1").stdout
    assert out.startswith("analysed 21 applications")


SERVE = ["sparkscope", "serve", "--port", "PORT"]
GUNICORN = [
    "python",
    "-m",
    "gunicorn",
    "--bind",
    "127.0.0.1:PORT",
    "--workers",
    "1",
    "sparkscope.web.app:create_app()",
]


@pytest.mark.parametrize("server", [SERVE, GUNICORN], indirect=True, ids=["serve", "gunicorn"])
def test_every_page_is_served(venv: Venv, server: tuple[str, subprocess.Popen[str]]) -> None:
    base, proc = server
    status, body = _get(f"{base}/api/apps")
    assert status == 200, body
    apps = json.loads(body)["apps"]
    assert len(apps) == 21
    app = next(a for a in apps if a["name"] == "daily_sales_etl")
    pages = {
        "/": b"Sparkscope",
        "/search": b"21 applications",
        f"/apps/{app['app_id']}": app["app_id"].encode(),
        f"/history?name={quote(app['name'])}": b"plotly.min.js",
        "/help": b"stage_skew",
        "/help/stage_skew": b"stage_skew",
        "/static/js/plotly.min.js": b"plotly.js v",
        "/static/css/sparkscope.css": b"{",
    }
    for page, marker in pages.items():
        status, body = _get(base + page)
        assert status == 200, (page, body[:500])
        assert marker in body, page
    proc.terminate()
    output = proc.communicate(timeout=30)[0]
    if "sparkscope" in proc.args[0]:
        db = Path(venv.env["SPARKSCOPE_DATA_DIR"]) / "sparkscope.db"
        assert f"sparkscope: serving the database sqlite:///{db}\n" in output


def test_postgres_upgrade_with_a_plain_url(venv: Venv, pg_server_url: str) -> None:
    url = create_pg_database(pg_server_url)
    try:
        plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        assert plain.startswith("postgresql://")
        out = venv.run(
            venv.bin("sparkscope"), "db", "upgrade", env={"SPARKSCOPE_DATABASE_URL": plain}
        ).stdout
        assert out == f"database at head: {make_url(plain)}\n"
        engine = make_engine(url)
        with engine.connect() as conn:
            stored = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
        engine.dispose()
        assert tuple(stored) == migrate.code_heads()
    finally:
        drop_pg_database(pg_server_url, url)
