"""The console alone (no tables): HTTPS when console.toml names a certificate and key (TLS
only, Secure cookies, HSTS); a key that does not fit the certificate is one line at start;
a broker that cannot be reached is said on the sign-in page."""

from __future__ import annotations

import signal
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import trustme

from tests.support.broker import closed_port, free_port
from tests.support.console import ConsoleHttp
from tests.support.daemon import REPO_ROOT
from tests.support.wait import wait_until

TIMEOUT_S = 30.0


def console_toml(tmp_path: Path, certificate: Path, key: Path, port: int) -> Path:
    path = tmp_path / "console.toml"
    path.write_text(
        f'[console]\nlisten = "127.0.0.1:{port}"\ncertificate = "{certificate}"\n'
        f'key = "{key}"\n[broker]\nport = {free_port()}\n',
        encoding="utf-8",
    )
    return path


def livetable_console(config: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "controller.tools.cli", "console", "--config", str(config)],
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )


def test_the_console_serves_https_with_secure_cookies(tmp_path: Path) -> None:
    ca = trustme.CA()
    served = ca.issue_cert("127.0.0.1")
    certificate, key = tmp_path / "console.crt", tmp_path / "console.key"
    served.cert_chain_pems[0].write_to_path(certificate)
    served.private_key_pem.write_to_path(key)
    port = free_port()
    process = livetable_console(
        console_toml(tmp_path, certificate, key, port), tmp_path / "console.log"
    )
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    base = f"https://127.0.0.1:{port}"
    try:

        def healthy() -> bool:
            assert process.poll() is None, (tmp_path / "console.log").read_text()
            try:
                with urllib.request.urlopen(f"{base}/healthz", context=trusted, timeout=2) as r:
                    return bool(r.read() == b"ok")
            except (urllib.error.URLError, ConnectionError):
                return False

        wait_until(healthy, TIMEOUT_S, "the console answering over HTTPS")
        with urllib.request.urlopen(f"{base}/signin", context=trusted, timeout=5) as page:
            cookie = page.headers["Set-Cookie"]
            assert cookie.startswith("livetable_signin=") and "Secure" in cookie, cookie
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
            assert page.headers["Strict-Transport-Security"].startswith("max-age=")
        # Plain HTTP to the TLS port gets no page.
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).read()
        process.send_signal(signal.SIGTERM)
        assert process.wait(TIMEOUT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_key_that_is_not_the_certificates_is_one_line(tmp_path: Path) -> None:
    ca = trustme.CA()
    certificate, key = tmp_path / "console.crt", tmp_path / "other.key"
    ca.issue_cert("127.0.0.1").cert_chain_pems[0].write_to_path(certificate)
    ca.issue_cert("127.0.0.1").private_key_pem.write_to_path(key)
    config = console_toml(tmp_path, certificate, key, free_port())
    done = subprocess.run(
        [sys.executable, "-m", "controller.tools.cli", "console", "--config", str(config)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done
    [line] = done.stderr.splitlines()
    assert line.startswith(f"livetable: error: {config}: [console] certificate {certificate}")
    assert f"and key {key} cannot be used" in line, line


def test_a_broker_that_cannot_be_reached_is_said_on_the_sign_in_page(tmp_path: Path) -> None:
    # Nothing listens on the broker's port.
    with closed_port() as broker_port:
        _sign_in(tmp_path, f"[broker]\nport = {broker_port}\n", reached=False)


def test_a_cluster_whose_every_node_is_down_cannot_be_reached(tmp_path: Path) -> None:
    with closed_port() as first, closed_port() as second:
        nodes = f'"127.0.0.1:{first}", "127.0.0.1:{second}"'
        _sign_in(tmp_path, f"[mqtt]\nhosts = [{nodes}]\n", reached=False)


def test_a_dead_node_does_not_stop_a_sign_in_while_another_is_up(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    # The first node refuses; the console's first client (the role's probe) moves on to the
    # second, which is up, and the account's own connection starts there.
    host, port = mqtt_broker
    with closed_port() as dead:
        nodes = f'"127.0.0.1:{dead}", "{host}:{port}"'
        said = _sign_in(tmp_path, f"[mqtt]\nhosts = [{nodes}]\n", reached=True)
    assert said.count(f"127.0.0.1:{dead} cannot be reached") == 1, said


def _sign_in(tmp_path: Path, broker_section: str, reached: bool) -> str:
    """Sign in to a console of ``broker_section``: in (``reached``), or told twice that the
    broker cannot be reached. The console's log."""
    port = free_port()
    config = tmp_path / "console.toml"
    config.write_text(
        f'[console]\nlisten = "127.0.0.1:{port}"\n{broker_section}', encoding="utf-8"
    )
    log = tmp_path / "console.log"
    process = livetable_console(config, log)
    try:
        browser = ConsoleHttp(f"http://127.0.0.1:{port}")

        def listening() -> bool:
            assert process.poll() is None, log.read_text()
            try:
                return browser.get("/healthz").status == 200
            except OSError:
                return False

        wait_until(listening, TIMEOUT_S, "the console listening")
        answer = browser.sign_in("alice", "a-password")
        if reached:
            assert answer.status == 303, (answer.status, answer.text, log.read_text())
        else:
            assert answer.status == 503, answer.text
            assert "The broker cannot be reached" in answer.text
            # Not counted as a failed sign-in: the next attempt is not held back.
            assert browser.sign_in("alice", "a-password").status == 503
        process.send_signal(signal.SIGTERM)
        assert process.wait(TIMEOUT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    said = log.read_text()
    assert "a-password" not in said
    assert ("sign-in of alice: the broker cannot be reached" in said) is not reached, said
    return said


def test_it_says_where_it_serves_when_it_starts(tmp_path: Path) -> None:
    """Without -v, as the unit runs it: one line on stderr (the journal) once it listens,
    with the address it serves and the broker it signs people in to; nothing else."""
    port, broker_port = free_port(), free_port()
    config = tmp_path / "console.toml"
    config.write_text(
        f'[console]\nlisten = "127.0.0.1:{port}"\n'
        f'[broker]\nhost = "localhost"\nport = {broker_port}\nprotocol = "3.1.1"\n',
        encoding="utf-8",
    )
    log = tmp_path / "console.log"
    process = livetable_console(config, log)
    try:
        wait_until(
            lambda: process.poll() is not None or "serving" in log.read_text(),
            TIMEOUT_S,
            "the console's first line",
        )
        assert process.poll() is None, log.read_text()
        [line] = log.read_text().splitlines()
        assert line.endswith(
            f" INFO livetable.console: serving http://127.0.0.1:{port} "
            f"(broker localhost:{broker_port}, MQTT 3.1.1)"
        ), line
        # It says so once it listens, not before.
        assert ConsoleHttp(f"http://127.0.0.1:{port}").get("/healthz").status == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(TIMEOUT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_the_wall_account_tries_an_unreachable_broker_again_at_a_slowing_pace(
    tmp_path: Path,
) -> None:
    """A broker down for hours must not fill the console's log: the wall account's waits
    between attempts double (5 s, 10 s, ...) up to a minute."""
    port = free_port()
    (tmp_path / "wall.password").write_text("wall-secret\n", encoding="utf-8")
    with closed_port() as broker_port:
        config = tmp_path / "console.toml"
        config.write_text(
            f'[console]\nlisten = "127.0.0.1:{port}"\n[broker]\nport = {broker_port}\n'
            f'[wall]\naccount = "wall"\npassword_file = "{tmp_path / "wall.password"}"\n',
            encoding="utf-8",
        )
        log = tmp_path / "console.log"
        process = livetable_console(config, log)
        try:

            def waits() -> list[str]:
                assert process.poll() is None, log.read_text()
                return [
                    line.rsplit("trying again in ", 1)[1]
                    for line in log.read_text().splitlines()
                    if "the wall account wall: the broker cannot be reached" in line
                ]

            wait_until(lambda: len(waits()) >= 2, TIMEOUT_S, "the wall account's second try")
            assert waits()[:2] == ["5 s", "10 s"], log.read_text()
            assert "wall-secret" not in log.read_text()
        finally:
            process.kill()
            process.wait()
