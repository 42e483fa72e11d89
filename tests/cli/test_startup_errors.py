"""Start-up: one-line ``accord: ...`` errors with exit status 2; the banner after bind (JSON-safe);
an access line per request; TLS from --ssl-certfile/--ssl-keyfile (SPEC H1, H2)."""

from __future__ import annotations

import datetime
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from accord.config import Settings

ROOT = Path(__file__).resolve().parents[2]
RULES = {"rules": [{"output": "hello there", "chunk_chars": 3}]}


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCORD_")}
    env.update(PYTHONPATH=str(ROOT), ACCORD_DATA_DIR=str(tmp / "data"), COLUMNS="100", **extra)
    return env


def _script(tmp: Path) -> Path:
    path = tmp / "rules.json"
    path.write_text(json.dumps(RULES))
    return path


def _accord(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "accord", *args],
        env=_env(tmp, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("accord: ")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return errors[0]


def test_bad_port_variable(tmp_path: Path) -> None:
    line = _one_line_error(_accord(tmp_path, "serve", ACCORD_PORT="abc"))
    assert "ACCORD_PORT" in line and "'abc'" in line


def test_bad_flag_value_names_the_flag(tmp_path: Path) -> None:
    line = _one_line_error(_accord(tmp_path, "serve", ACCORD_UPSTREAM_ATTEMPTS="many"))
    assert "--upstream-attempts" in line


def test_missing_model(tmp_path: Path) -> None:
    line = _one_line_error(_accord(tmp_path, "serve", "--model", str(tmp_path / "absent.gguf")))
    assert "absent.gguf" in line


def test_missing_script(tmp_path: Path) -> None:
    line = _one_line_error(_accord(tmp_path, "serve", "--engine", "scripted"))
    assert "--script" in line


def test_busy_port(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = _accord(
            tmp_path, "serve", "--engine", "scripted", "--script", str(_script(tmp_path)), "--port", str(port)
        )
    line = _one_line_error(result)
    assert f"127.0.0.1:{port}" in line and "in use" in line


def test_upstream_lists_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCORD_UPSTREAM", "http://h:8000")
    assert Settings().upstream == ["http://h:8000"]
    monkeypatch.setenv("ACCORD_UPSTREAM", "http://a:8000, http://b:8000")
    assert Settings().upstream == ["http://a:8000", "http://b:8000"]


@contextmanager
def _serving(tmp: Path, *args: str) -> Iterator[tuple[str, subprocess.Popen[str], list[dict[str, Any]]]]:
    """``accord serve`` in JSON log mode; yields its URL (from the banner), the process, its log."""
    command = [sys.executable, "-m", "accord", "serve", "--engine", "scripted"]
    command += ["--script", str(_script(tmp)), "--port", "0", "--log-format", "json", *args]
    proc = subprocess.Popen(
        command,
        env=_env(tmp),
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    lines: list[dict[str, Any]] = []
    try:
        for raw in proc.stderr:
            # JSON log mode: every line on stderr is one JSON object, the banner included.
            lines.append(json.loads(raw))
            if lines[-1]["event"] == "ready":
                break
        assert lines and lines[-1]["event"] == "ready", lines
        yield lines[-1]["url"], proc, lines
    finally:
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=60)
        lines.extend(json.loads(raw) for raw in rest.splitlines())
        assert proc.returncode == 0


def test_banner_after_bind_and_access_lines(tmp_path: Path) -> None:
    with _serving(tmp_path) as (url, _proc, lines):
        # The banner is only written once the socket is bound: the first request succeeds.
        assert httpx.get(url + "/health", timeout=10).status_code == 200
        assert httpx.get(url + "/no/such/route", timeout=10).status_code == 404
        ok = httpx.post(url + "/v1/responses", json={"model": "m", "input": "hi"}, timeout=30)
        assert ok.status_code == 200
    access = [(line["method"], line["path"], line["status"]) for line in lines if line["event"] == "request"]
    assert ("GET", "/health", 200) in access
    assert ("GET", "/no/such/route", 404) in access
    # A response logs its own line (the run driver's), with its id, cause and token counts.
    assert ("POST", "/v1/responses", 200) not in access
    assert any(line["event"] == "response" and line["status"] == 200 for line in lines)


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    import ipaddress

    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_tls(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    with _serving(tmp_path, "--ssl-certfile", str(cert), "--ssl-keyfile", str(key)) as (url, _proc, _lines):
        assert url.startswith("https://")
        import ssl

        context = ssl.create_default_context(cafile=str(cert))
        resp = httpx.get(url + "/health", verify=context, timeout=10)
        assert resp.status_code == 200 and resp.json() == {"status": "ok"}
        with pytest.raises(httpx.ConnectError):
            httpx.get(url + "/health", timeout=10)  # not trusted without the certificate
