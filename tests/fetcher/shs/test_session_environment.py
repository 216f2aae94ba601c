"""A session reads its proxies, netrc login, CA bundle and Accept-Encoding as requests reads
them, importing requests only where the environment names a proxy or a netrc file exists."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests.utils

from fetcher.shs import session

ROOT = "http://shs.example:18080/api/v1"
ROOT_DIR = Path(__file__).resolve().parents[3]
NAMES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy",
         "NO_PROXY", "no_proxy", "NETRC", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")  # fmt: skip


@pytest.fixture(autouse=True)
def bare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def as_requests_reads_it(root: str) -> tuple[dict[str, str], object, str]:
    netrc = requests.utils.get_netrc_auth(root)
    return (
        dict(requests.utils.get_environ_proxies(root)),
        (netrc[0], netrc[1]) if netrc else None,
        requests.utils.DEFAULT_CA_BUNDLE_PATH,
    )


def read(root: str) -> tuple[dict[str, str], object, str]:
    env = session._environment(root)
    return env.proxies, env.netrc, env.ca_bundle


def test_accept_encoding_is_what_requests_asks_for() -> None:
    assert session.ACCEPT_ENCODING == requests.utils.DEFAULT_ACCEPT_ENCODING


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"HTTP_PROXY": "http://proxy.example:3128"},
        {"http_proxy": "proxy.example:3128", "NO_PROXY": "example"},
        {"HTTPS_PROXY": "http://proxy.example:3128", "no_proxy": "shs.example:18080"},
        {"ALL_PROXY": "socks5://proxy.example:1080", "NO_PROXY": "other.example"},
    ],
)
def test_proxies_are_those_requests_finds(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert read(ROOT) == as_requests_reads_it(ROOT)
    proxies = session._environment(ROOT).proxies
    expected = requests.utils.select_proxy(ROOT, proxies)
    found = session._environment(ROOT).proxy_for(ROOT)
    assert found == (
        requests.utils.prepend_scheme_if_needed(expected, "http") if expected else None
    )


@pytest.mark.parametrize("where", ["none", "home", "home_underscore", "named", "named_missing"])
def test_the_netrc_login_is_the_one_requests_finds(
    where: str, bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "machine shs.example login ann password secret\nmachine other login bob password x\n"
    if where == "home":
        (bare / ".netrc").write_text(text)
    elif where == "home_underscore":
        (bare / "_netrc").write_text(text)
    elif where == "named":
        (tmp_path / "creds").write_text(text)
        monkeypatch.setenv("NETRC", str(tmp_path / "creds"))
    elif where == "named_missing":
        (bare / ".netrc").write_text(text)  # not read: NETRC names another file
        monkeypatch.setenv("NETRC", str(tmp_path / "missing"))
    assert read(ROOT) == as_requests_reads_it(ROOT)
    assert (read(ROOT)[1] is not None) == (where in ("home", "home_underscore", "named"))


def test_the_ca_bundle_named_in_the_environment_comes_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CURL_CA_BUNDLE", "/etc/curl.pem")
    assert session._environment(ROOT).ca_bundle == "/etc/curl.pem"
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/requests.pem")
    assert session._environment(ROOT).ca_bundle == "/etc/requests.pem"


def test_a_session_without_proxy_or_netrc_does_not_import_requests(bare: Path) -> None:
    """requests' imports cost some 20 ms of a fetch's CPU; nothing there needs them."""
    code = (
        "import sys\n"
        "from fetcher.shs.client import ShsClient\n"
        "ShsClient('http://127.0.0.1:9', retries=0).session\n"
        "print('requests' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in NAMES} | {"HOME": str(bare)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT_DIR, capture_output=True, text=True
    )
    assert done.stdout.strip() == "False", done.stderr
