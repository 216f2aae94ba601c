"""A self-signed certificate for 127.0.0.1 and localhost, made by the openssl command, for the
tests of every client that speaks TLS to a real server on the loopback interface (SMTP, webhooks,
the History Server)."""

from __future__ import annotations

import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Cert:
    cert: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.cert, self.key)
        return ctx


def make_cert(folder: Path) -> Cert:
    """A new key and certificate in ``folder`` (valid two days)."""
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key_path), "-out", str(cert_path), "-days", "2",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return Cert(cert_path, key_path)
