"""Shared fixtures: real mosquitto brokers (of any configuration, open, or locked down with
passwords and the production ACL), and a leak check that fails any test leaving threads, child
processes or pseudo-terminals behind."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.support.broker import BrokerProcess, start_broker, write_password_file

REPO_ROOT = Path(__file__).resolve().parent.parent

# Hypothesis' per-example deadline (200 ms) and its too_slow health check are timed
# assertions: on a loaded CI machine an example may take longer and fail a correct test.
# Speed is measured by the benchmarks, never by the tests.
settings.register_profile("livetable", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("livetable")
PRODUCTION_ACL = REPO_ROOT / "systemd" / "mosquitto" / "livetable.acl"
PRODUCTION_CONF = REPO_ROOT / "systemd" / "mosquitto" / "livetable.conf"
# The shipped broker's settings of who may connect as whom that a test broker takes as they
# are (the rest of livetable.conf names system paths and ports:
# tests/broker/test_studio_broker_config.py runs the whole file).
IDENTITY_SETTINGS = ("use_username_as_clientid",)


def production_identity_settings() -> str:
    lines = PRODUCTION_CONF.read_text().splitlines()
    # A setting the shipped file repeats under each listener is said once here: the tests'
    # broker has one listener.
    kept = dict.fromkeys(line for line in lines if line.split(" ")[0] in IDENTITY_SETTINGS)
    return "".join(line + "\n" for line in kept)


# Threads and processes get this long to wind down after a test before they count as leaked.
LEAK_GRACE_S = 3.0


@pytest.fixture
def start_mosquitto() -> Iterator[Callable[..., BrokerProcess]]:
    """Start real mosquittos for the test: ``start_mosquitto(workdir, **options)`` takes
    :func:`~simulators.broker.start_broker`'s arguments and returns the running broker.
    Every broker is stopped after the test, which fails if one had died during it."""
    brokers: list[BrokerProcess] = []

    def start(workdir: Path, **options: Any) -> BrokerProcess:
        broker = start_broker(workdir, **options)
        brokers.append(broker)
        return broker

    yield start
    died = [(broker, code) for broker in brokers if (code := broker.stop()) is not None]
    if died:
        pytest.fail(
            "\n".join(
                f"mosquitto died during the test (exit {code}):\n{broker.log()}"
                for broker, code in died
            )
        )


@pytest.fixture
def mqtt_broker(tmp_path: Path, start_mosquitto: Callable[..., BrokerProcess]) -> tuple[str, int]:
    """A real mosquitto on a free loopback port accepting anonymous clients: (host, port)."""
    broker = start_mosquitto(tmp_path / "broker")
    return broker.host, broker.port


# Accounts of the production ACL (systemd/mosquitto/livetable.acl) by role: the daemon of
# table t1, the platform, two supervisors (alice, and bob for one acting as another), a viewer,
# the dealer station of t1.
SECURE_USERS: dict[str, tuple[str, str]] = {
    role: (username, f"{role}-secret-{os.getpid()}")
    for role, username in {
        "table": "livetable-t1",
        "platform": "platform",
        "supervisor": "alice",
        "other_supervisor": "bob",
        "viewer": "viewer",
        "dealer": "dealer-t1",
    }.items()
}


@pytest.fixture
def secure_mqtt_broker(
    tmp_path: Path, start_mosquitto: Callable[..., BrokerProcess]
) -> BrokerProcess:
    """mosquitto with anonymous access refused, a password file, the production ACL and the
    production rule that a client's id is its account's name.

    ``broker.users`` maps each role (table, platform, supervisor, viewer) to (user, password).
    """
    workdir = tmp_path / "secure-broker"
    workdir.mkdir()
    password_file = workdir / "passwords"
    write_password_file(password_file, SECURE_USERS)
    return start_mosquitto(
        workdir,
        extra_config=(
            f"allow_anonymous false\npassword_file {password_file}\nacl_file {PRODUCTION_ACL}\n"
            + production_identity_settings()
        ),
        users=SECURE_USERS,
    )


def child_pids() -> set[int]:
    own = os.getpid()
    children: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        # fields[0] is the state, fields[1] the parent pid; zombies still count as leaked
        # until someone reaps them.
        if int(fields[1]) == own:
            children.add(int(entry.name))
    return children


def open_ptys() -> set[str]:
    ptys: set[str] = set()
    for entry in os.scandir("/proc/self/fd"):
        try:
            target = os.readlink(entry.path)
        except OSError:
            continue
        if target == "/dev/ptmx" or target.startswith("/dev/pts/"):
            ptys.add(f"fd {entry.name} -> {target}")
    return ptys


def find_leaks(
    threads_before: set[threading.Thread],
    children_before: set[int],
    ptys_before: set[str],
    grace_s: float = LEAK_GRACE_S,
) -> list[str]:
    """What appeared since the snapshot and is still there after ``grace_s`` seconds."""
    deadline = time.monotonic() + grace_s
    while True:
        threads = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
        children = child_pids() - children_before
        ptys = open_ptys() - ptys_before
        if not (threads or children or ptys) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    problems = []
    if threads:
        problems.append("threads left running: " + ", ".join(t.name for t in threads))
    if children:
        problems.append("child processes left running: " + ", ".join(map(str, sorted(children))))
    if ptys:
        problems.append("pseudo-terminals left open: " + ", ".join(sorted(ptys)))
    return problems


@pytest.fixture(autouse=True)
def no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that leaves threads, child processes or open ptys behind.

    Autouse and function-scoped, so it is set up before and torn down after the test's other
    function-scoped fixtures: what those fixtures clean up does not count as a leak.
    """
    threads_before = set(threading.enumerate())
    children_before = child_pids()
    ptys_before = open_ptys()
    yield
    if request.node.get_closest_marker("allow_leaks"):
        return
    problems = find_leaks(threads_before, children_before, ptys_before)
    if problems:
        pytest.fail("leak check: " + "; ".join(problems), pytrace=False)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked slow run first: xdist hands the first tests out to both workers in
    turn, so the longest work starts at once and no worker is left alone with a long test
    at the end of the run."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
