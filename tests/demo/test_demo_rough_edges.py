"""The demo's rough edges, each as a person meets it: a broker that refuses the demo, a
SIGTERM, a bad argument, a shoe link in a missing folder, deliberate faults, and what the
live view and the plain lines say.

Every ``livetable demo`` here runs as a child process with ``TMPDIR`` in the test's own
folder, so that whatever it leaves behind is seen (and never left in the machine's /tmp).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tests.conftest import PRODUCTION_ACL, SECURE_USERS, production_identity_settings
from tests.support.broker import BrokerProcess, write_password_file
from tests.support.wait import wait_until

LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]
REPO_ROOT = Path(__file__).resolve().parents[2]
FAST = ["--pace-s", "0.01", "--betting-s", "0.3", "--decision-s", "60", "--dealer-idle-s", "60"]
# A demo that meets a broker it cannot work with ends long before this (it waited for its
# own 600 s timeout before); the bound only keeps a hanging demo from hanging the suite.
REFUSED_WITHIN_S = 60.0


def demo_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a demo child: its temporary folders under ``tmp_path/tmp``."""
    temporary = tmp_path / "tmp"
    temporary.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(temporary)}


def leftovers(tmp_path: Path) -> list[str]:
    return sorted(path.name for path in (tmp_path / "tmp").glob("livetable-demo-*"))


def run_demo(tmp_path: Path, *args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*LIVETABLE, "demo", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        cwd=REPO_ROOT,
        env=demo_env(tmp_path),
    )


# -- a. a broker that refuses what the demo needs ------------------------------------------------


def _refused(tmp_path: Path, url: str) -> str:
    """The demo against ``url`` fails: its one line of error (the demo's broker line is on
    stdout, everything else it says is that line)."""
    done = run_demo(
        tmp_path, "--plain", "--rounds", "1", "--broker", url, timeout_s=REFUSED_WITHIN_S
    )
    assert done.returncode != 0, done.stdout[-2000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("livetable: error: "), lines
    assert leftovers(tmp_path) == []
    return lines[0]


def test_the_shipped_broker_refusing_the_demos_connection_is_said_in_one_line(
    tmp_path: Path, secure_mqtt_broker: BrokerProcess
) -> None:
    broker = secure_mqtt_broker
    where = f"{broker.host}:{broker.port}"
    line = _refused(tmp_path, f"mqtt://{where}")
    assert "refused the connection" in line and "not authori" in line.lower(), line
    assert "no account" in line, line
    user, _password = SECURE_USERS["supervisor"]
    line = _refused(tmp_path, f"mqtt://{user}:not-{user}s-password@{where}")
    assert "refused the connection" in line and user in line, line
    assert "password@" not in line and f"not-{user}s" not in line  # never the password


def test_the_shipped_acl_refusing_what_the_demo_publishes_is_said_in_one_line(
    tmp_path: Path, secure_mqtt_broker: BrokerProcess
) -> None:
    """Supervisor alice may not write a table's topics: the demo's table could never say a
    word, and the demo says so instead of waiting for it."""
    broker = secure_mqtt_broker
    user, password = SECURE_USERS["supervisor"]
    line = _refused(tmp_path, f"mqtt://{user}:{password}@{broker.host}:{broker.port}")
    assert "refused" in line and "livetable/demo/" in line and user in line, line
    assert password not in line


def test_a_broker_with_one_connection_per_account_is_said_in_one_line(
    tmp_path: Path, start_mosquitto: Callable[..., BrokerProcess]
) -> None:
    """The shipped broker takes an account's name as its client id: a second connection of
    the account drops the first. The demo connects its view, tables and people under one
    account, so it cannot work there, and says why."""
    workdir = tmp_path / "broker"
    workdir.mkdir()
    passwords = workdir / "passwords"
    account = {"demo": ("demo-account", "demo-secret")}
    write_password_file(passwords, account)
    broker = start_mosquitto(
        workdir,
        extra_config=(
            f"allow_anonymous false\npassword_file {passwords}\n" + production_identity_settings()
        ),
        users=account,
    )
    line = _refused(tmp_path, f"mqtt://demo-account:demo-secret@{broker.host}:{broker.port}")
    assert "one connection per account" in line, line


def test_an_acl_refusing_the_demos_requests_is_said_in_one_line(
    tmp_path: Path, start_mosquitto: Callable[..., BrokerProcess]
) -> None:
    """The table account livetable-t1 of the shipped ACL on a broker that allows several
    connections of it: it may write only table t1's topics, not the demo's table's."""
    workdir = tmp_path / "broker"
    workdir.mkdir()
    passwords = workdir / "passwords"
    write_password_file(passwords, SECURE_USERS)
    broker = start_mosquitto(
        workdir,
        extra_config=(
            f"allow_anonymous false\npassword_file {passwords}\nacl_file {PRODUCTION_ACL}\n"
        ),
        users=SECURE_USERS,
    )
    user, password = SECURE_USERS["table"]
    line = _refused(tmp_path, f"mqtt://{user}:{password}@{broker.host}:{broker.port}")
    assert "refused" in line and "livetable/demo/" in line, line


# -- b. SIGTERM ------------------------------------------------------------------------------------


def test_sigterm_stops_the_demo_its_daemons_and_removes_its_work_folder(tmp_path: Path) -> None:
    """Stopped as a service manager stops it, the demo cleans up as it does on Ctrl-C: its
    temporary work folder is removed and its table daemons (child processes) stop."""
    out = tmp_path / "demo.out"
    with open(out, "wb") as output:
        process = subprocess.Popen(
            [*LIVETABLE, "demo", "--plain", "--tables", "2", "--rounds", "500", *FAST],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=REPO_ROOT,
            env=demo_env(tmp_path),
        )
    try:
        wait_until(lambda: "round_settled" in out.read_text(), 90, "a round settled")
        assert len(leftovers(tmp_path)) == 1, leftovers(tmp_path)
        daemons = psutil.Process(process.pid).children(recursive=True)
        assert len([p for p in daemons if "run" in p.cmdline()]) == 2, daemons
        process.send_signal(signal.SIGTERM)
        status = process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert status != 0, out.read_text()[-2000:]
    assert leftovers(tmp_path) == [], out.read_text()[-2000:]
    _gone, alive = psutil.wait_procs(daemons, timeout=10)
    assert alive == [], alive
    assert "livetable demo: table demo1:" in out.read_text()  # the summary, as after Ctrl-C


# -- c. argument errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--tables", "0"],
        ["--tables", "51"],
        ["--rounds", "0"],
        ["--misread-rate", "2"],
        ["--broker", "http://nowhere"],
        ["--broker", "mqtt://host:99999"],
    ],
)
def test_every_argument_error_shows_the_usage_and_exits_2(tmp_path: Path, args: list[str]) -> None:
    done = run_demo(tmp_path, *args, timeout_s=60)
    assert done.returncode == 2, (args, done.returncode, done.stderr)
    assert done.stderr.startswith("usage: livetable demo"), done.stderr
    assert "livetable demo: error: " in done.stderr, done.stderr
    assert leftovers(tmp_path) == []


# -- d. a shoe link in a folder that is not there -------------------------------------------------


def test_sim_shoe_says_the_links_folder_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    done = subprocess.run(
        [*LIVETABLE, "sim", "shoe", "--protocol", "ascii", "--link", str(missing / "shoe")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    (line,) = done.stderr.splitlines()
    assert f"{missing} does not exist" in line, line
    assert "/dev/pts" not in line, line


# -- e. deliberate faults are the table's events, not warnings ------------------------------------


@pytest.mark.parametrize("protocol", ["ascii", "angel-eye", "native"])
def test_deliberate_misreads_are_no_warnings(tmp_path: Path, protocol: str) -> None:
    done = run_demo(
        tmp_path,
        "--plain",
        "--protocol",
        protocol,
        "--game",
        "blackjack-classic",
        "--rounds",
        "3",
        "--misread-rate",
        "0.5",
        "--resolve-delay-s",
        "0.1",
        "--work-dir",
        str(tmp_path / "work"),
        *FAST,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stdout + done.stderr
    assert "table_paused" in said and "misread" in said, said[-3000:]
    assert " WARNING " not in said, [line for line in said.splitlines() if "WARNING" in line][:5]


def test_the_demos_logs_stay_at_warning_for_what_is_no_deliberate_fault() -> None:
    """Only the shoe protocol's words about the line are lowered: a warning of the table's
    own stays a warning."""
    import logging

    from controller.tools.demo import deliberate_faults_logged_as_debug

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    root = logging.getLogger()
    handler, level = Keep(), root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        with deliberate_faults_logged_as_debug():
            logging.getLogger("drivers.shoe.sessions").warning("unreadable line from the shoe")
            logging.getLogger("controller.service.daemon").warning("lost the broker")
        logging.getLogger("drivers.shoe.sessions").warning("after the demo")
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert [(r.name, r.levelname) for r in records] == [
        ("controller.service.daemon", "WARNING"),
        ("drivers.shoe.sessions", "WARNING"),
    ]


def test_a_finished_demo_leaves_no_temporary_folder(tmp_path: Path) -> None:
    done = run_demo(tmp_path, "--plain", "--rounds", "1", *FAST)
    assert done.returncode == 0, done.stderr[-3000:]
    assert leftovers(tmp_path) == []
