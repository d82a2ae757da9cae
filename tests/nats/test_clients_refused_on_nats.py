"""``livetable ctl`` and ``livetable console`` against a NATS node, which speaks MQTT 3.1.1
only: a refused connection (the MQTT version, the credentials) is said in one line at once,
naming what to change, and never retried in silence."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.nats.conftest import SecureCluster
from tests.support.broker import free_port
from tests.support.console import ConsoleHttp
from tests.support.daemon import REPO_ROOT
from tests.support.nats import NatsCluster
from tests.support.wait import wait_until

# Only keeps a hanging client from hanging the suite: nothing here is timed.
HANG_S = 120.0


def ctl(port: int, *argv: str, password: str | None = None) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "LIVETABLE_PASSWORD"}
    if password is not None:
        environment["LIVETABLE_PASSWORD"] = password
    return subprocess.run(
        [
            *[sys.executable, "-m", "controller.tools.cli", "ctl", "--table", "t1"],
            *["--broker", "127.0.0.1", "--port", str(port), "--wait-s", "2", *argv],
        ],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
        cwd=REPO_ROOT,
        env=environment,
        stdin=subprocess.DEVNULL,
    )


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("livetable: error: "), lines
    return lines[0]


def test_ctl_over_mqtt_5_on_a_nats_node_is_told_to_try_3_1_1(nats_cluster: NatsCluster) -> None:
    port = nats_cluster.node(1).mqtt_port
    line = one_line_error(ctl(port, "status"))
    assert line == (
        f"livetable: error: the MQTT broker at 127.0.0.1:{port} refused MQTT 5: try --mqtt 3.1.1"
    ), line
    # Under 3.1.1 the connection is taken: there is only no table t1 to ask.
    line = one_line_error(ctl(port, "--mqtt", "3.1.1", "status"))
    assert "no table 't1'" in line, line


def test_ctl_with_a_wrong_password_on_a_nats_node_is_one_line(
    secure_nats_cluster: SecureCluster,
) -> None:
    port = secure_nats_cluster.cluster.node(2).mqtt_port
    done = ctl(port, "--mqtt", "3.1.1", "--user", "alice", "status", password="not-alices")
    line = one_line_error(done)
    assert "refused" in line and "alice" in line, line
    assert "not-alices" not in line


def _console(
    tmp_path: Path, broker_port: int, protocol: str
) -> tuple[subprocess.Popen[bytes], ConsoleHttp, Path]:
    port = free_port()
    config = tmp_path / "console.toml"
    config.write_text(
        f'[console]\nlisten = "127.0.0.1:{port}"\n'
        f'[broker]\nport = {broker_port}\nprotocol = "{protocol}"\n',
        encoding="utf-8",
    )
    log = tmp_path / "console.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "controller.tools.cli", "console", "--config", str(config)],
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    browser = ConsoleHttp(f"http://127.0.0.1:{port}")

    def listening() -> bool:
        assert process.poll() is None, log.read_text()
        try:
            return browser.get("/healthz").status == 200
        except OSError:
            return False

    wait_until(listening, HANG_S, "the console listening")
    return process, browser, log


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(HANG_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_the_console_over_mqtt_5_on_a_nats_node_says_which_version_to_set(
    tmp_path: Path, secure_nats_cluster: SecureCluster
) -> None:
    port = secure_nats_cluster.cluster.node(1).mqtt_port
    password = secure_nats_cluster.passwords["alice"]
    process, browser, log = _console(tmp_path, port, "5")
    try:
        answer = browser.sign_in("alice", password)
        assert answer.status == 503, answer.text
        assert (
            "refuses the console&#x27;s MQTT 5" in answer.text
            or "refuses the console's MQTT 5" in answer.text
        ), answer.text
        # The console's own line names its setting (the API client's names the daemon's).
        said = [
            line
            for line in log.read_text().splitlines()
            if "controller.console" in line and "refused MQTT 5" in line
        ]
        assert len(said) == 1 and 'set [mqtt] protocol = "3.1.1"' in said[0], log.read_text()
        # Not a failed sign-in: the next attempt is not held back, and is said again.
        assert browser.sign_in("alice", password).status == 503
    finally:
        _stop(process)
    assert password not in log.read_text()


def test_the_console_with_a_wrong_password_on_a_nats_node_says_so(
    tmp_path: Path, secure_nats_cluster: SecureCluster
) -> None:
    port = secure_nats_cluster.cluster.node(3).mqtt_port
    process, browser, log = _console(tmp_path, port, "3.1.1")
    try:
        answer = browser.sign_in("alice", "not-alices-password")
        assert answer.status == 401, answer.text
        assert "Wrong account name or password" in answer.text
        assert "refused" in log.read_text() and "alice" in log.read_text(), log.read_text()
    finally:
        _stop(process)
    assert "not-alices-password" not in log.read_text()
