"""The shipped broker configuration as docs/install.md installs it, run by the distribution's
mosquitto in a network namespace of its own.

systemd/mosquitto/livetable.conf becomes /etc/mosquitto/mosquitto.conf, with livetable.acl,
a password file and certificates beside it (docs/install.md, section 3), and bridge.conf goes
to conf.d on a table PC. Here all of that lives under a temporary root: the files' system
paths (/etc/mosquitto, /run/mosquitto, /var/lib/mosquitto) get the root as a prefix, and
nothing else in them changes, ports included. mosquitto starts as root, as systemd starts it,
and becomes the ``mosquitto`` user; ``unshare --net`` gives it a network namespace with only
a loopback, where 1883 and 8883 are free. The clients run in that namespace too
(tests.support.netns_mqtt).
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.broker import write_password_file
from tests.support.netns_mqtt import NamespaceClients

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED = REPO_ROOT / "systemd" / "mosquitto"
MOSQUITTO = "/usr/sbin/mosquitto"
# The system folders the shipped files name; each moves under the test's root, as it is.
SYSTEM_DIRS = ("/etc/mosquitto/", "/run/mosquitto/", "/var/lib/mosquitto/")
# docs/install.md, section 3: 1883 on localhost only, 8883 (TLS) on every address.
EXPECTED_LISTENING = {("127.0.0.1", 1883), ("0.0.0.0", 8883), ("::", 8883)}
LISTENERS = {"1883": False, "8883": True}  # port: over TLS
START_TIMEOUT_S = 30.0
# Room for the broker to deliver a duplicate that should not exist.
QUIET_S = 0.5
MESSAGE_TIMEOUT_S = 20.0
# /proc/<pid>/net/tcp{,6}: the state of a listening socket.
TCP_LISTEN = "0A"


def _shipped_accounts() -> list[str]:
    """Every account of the shipped ACL (its ``user`` lines)."""
    lines = (SHIPPED / "livetable.acl").read_text().splitlines()
    return [line.split()[1] for line in lines if line.startswith("user ")]


ACCOUNTS = _shipped_accounts()


def _unavailable() -> str | None:
    """Why this machine cannot run the broker in a namespace of its own, if it cannot."""
    if os.geteuid() != 0:
        return "needs root: a network namespace, and mosquitto switching to its own user"
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (util-linux, iproute2)"
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare --net fails here: {probe.stderr.strip()}"
    return None


needs_namespace = pytest.mark.skipif(_unavailable() is not None, reason=str(_unavailable()))


def _make_certificates(certs: Path) -> None:
    """A test CA and a broker certificate for 127.0.0.1, as docs/install.md 3.2-3.3 make
    them for the studio's names."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=certs)

    new_key = ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl(
        *new_key,
        "-x509",
        "-days",
        "2",
        "-subj",
        "/CN=test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    )
    openssl(*new_key, "-subj", "/CN=127.0.0.1", "-keyout", "broker.key", "-out", "broker.csr")
    (certs / "broker.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl(
        "x509",
        "-req",
        "-days",
        "2",
        "-in",
        "broker.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-extfile",
        "broker.ext",
        "-out",
        "broker.pem",
    )
    for name in ("ca.key", "broker.csr", "broker.ext", "ca.srl"):
        (certs / name).unlink(missing_ok=True)


def rooted(text: str, root: Path) -> str:
    """``text`` (a shipped file) with each system folder moved under ``root``; the only
    change this test makes to a shipped file."""
    for folder in SYSTEM_DIRS:
        text = text.replace(folder, f"{root}{folder}")
    return text


@dataclass
class ShippedBroker:
    root: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    passwords: dict[str, str]

    @property
    def ca_file(self) -> Path:
        return self.root / "etc/mosquitto/certs/ca.pem"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def listening(self) -> set[tuple[str, int]]:
        """The TCP sockets listening in the broker's network namespace: (address, port)."""
        found = set()
        for name in ("tcp", "tcp6"):
            rows = Path(f"/proc/{self.process.pid}/net/{name}").read_text().splitlines()[1:]
            for row in rows:
                fields = row.split()
                if fields[3] != TCP_LISTEN:
                    continue
                address, port = fields[1].split(":")
                # The kernel prints each 32-bit word of the address in host (little) order.
                raw = b"".join(
                    bytes.fromhex(address[i : i + 8])[::-1] for i in range(0, len(address), 8)
                )
                found.add((str(ipaddress.ip_address(raw)), int(port, 16)))
        return found


def _install(root: Path, *, table_pc: bool) -> dict[str, str]:
    """docs/install.md's section 3 under ``root``: the configuration, the ACL, accounts for
    every account of the ACL, the certificates; with ``table_pc``, bridge.conf in conf.d.
    Owners and modes as the page and Debian's mosquitto.service give them."""
    mosquitto = pwd.getpwnam("mosquitto")
    etc = root / "etc/mosquitto"
    (etc / "conf.d").mkdir(parents=True)
    (etc / "mosquitto.conf").write_text(rooted((SHIPPED / "livetable.conf").read_text(), root))
    (etc / "livetable.acl").write_text(rooted((SHIPPED / "livetable.acl").read_text(), root))
    passwords = {name: f"{name}-{uuid.uuid4().hex[:12]}" for name in ACCOUNTS}
    write_password_file(
        etc / "livetable.passwd", {name: (name, pw) for name, pw in passwords.items()}
    )
    certs = etc / "certs"
    certs.mkdir()
    _make_certificates(certs)
    if table_pc:
        bridge = rooted((SHIPPED / "bridge.conf").read_text(), root)
        (etc / "conf.d" / "bridge.conf").write_text(bridge)
        shutil.copy(certs / "ca.pem", certs / "studio-ca.pem")
    for path in (etc / "livetable.acl", etc / "livetable.passwd", certs / "broker.key"):
        os.chown(path, 0, mosquitto.pw_gid)
        path.chmod(0o640)
    os.chown(certs, 0, mosquitto.pw_gid)
    certs.chmod(0o750)
    # mosquitto.service's ExecStartPre makes /run/mosquitto; the package, /var/lib/mosquitto.
    for state in (root / "run/mosquitto", root / "var/lib/mosquitto"):
        state.mkdir(parents=True)
        os.chown(state, mosquitto.pw_uid, mosquitto.pw_gid)
    return passwords


@contextmanager
def shipped_broker(*, table_pc: bool = False) -> Iterator[ShippedBroker]:
    """mosquitto on the installed files, as mosquitto.service runs it, in a network namespace
    of its own; stopped at the end, which fails if it had died."""
    # Not pytest's tmp_path: the mosquitto user could not reach into it.
    root = Path(tempfile.mkdtemp(prefix="livetable-broker-"))
    root.chmod(0o755)
    try:
        passwords = _install(root, table_pc=table_pc)
        log_path = root / "mosquitto.stderr"
        with log_path.open("wb") as log:
            # unshare and sh exec: the process is mosquitto itself, its pid the broker's.
            process = subprocess.Popen(
                [
                    "unshare",
                    "--net",
                    "sh",
                    "-c",
                    'ip link set lo up && exec "$0" -c "$1"',
                    MOSQUITTO,
                    str(root / "etc/mosquitto/mosquitto.conf"),
                ],
                stdout=log,
                stderr=log,
            )
        broker = ShippedBroker(root, process, log_path, passwords)
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while " running" not in broker.log():
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"mosquitto did not start (exit {process.poll()}):\n{broker.log()}")
                time.sleep(0.05)
            yield broker
        finally:
            died_with = process.poll()
            if died_with is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        if died_with is not None:
            pytest.fail(f"mosquitto died during the test (exit {died_with}):\n{broker.log()}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


@needs_namespace
@pytest.mark.parametrize("table_pc", [False, True], ids=["studio", "table-pc-with-bridge"])
def test_it_starts_and_listens_where_it_says_and_nowhere_else(table_pc: bool) -> None:
    with shipped_broker(table_pc=table_pc) as broker:
        assert broker.listening() == EXPECTED_LISTENING, broker.log()
        assert "Error:" not in broker.log(), broker.log()
        if table_pc:
            assert "Connecting bridge" in broker.log(), broker.log()


class Clients:
    """The namespace's clients, each connected to one listener with one account."""

    def __init__(self, broker: ShippedBroker, port: str) -> None:
        self.broker = broker
        self.port = port
        self.remote = NamespaceClients(broker.process.pid)

    def connect(
        self, name: str, account: str, client_id: str, *, clean: bool, protocol: str = "3.1.1"
    ) -> dict[str, object]:
        tls = LISTENERS[self.port]
        answer = self.remote.call(
            "connect",
            name,
            port=int(self.port),
            account=account,
            password=self.broker.passwords[account],
            client_id=client_id,
            protocol=protocol,
            clean=clean,
            cafile=str(self.broker.ca_file) if tls else None,
        )
        assert answer["ok"], f"{account} as {client_id} on {self.port}: {answer['reason']}"
        return answer

    def publish_once(self, account: str, topic: str, payload: str) -> None:
        self.connect("publisher", account, account, clean=True)
        answer = self.remote.call("publish", "publisher", topic=topic, payload=payload)
        self.remote.call("close", "publisher")
        assert answer["acknowledged"], f"{account} could not publish on {topic}"

    def close(self) -> None:
        self.remote.close()


@pytest.fixture(params=list(LISTENERS), ids=[f"listener-{port}" for port in LISTENERS])
def clients(request: pytest.FixtureRequest) -> Iterator[Clients]:
    with shipped_broker() as broker:
        clients = Clients(broker, request.param)
        try:
            yield clients
        finally:
            clients.close()


def _traffic_for(victim: str) -> tuple[str, str, str]:
    """What ``victim`` reads: (its subscription, a topic under it, an account that may
    publish there). A table reads its requests; every other account its own responses."""
    if victim.startswith("livetable-"):
        table = victim.removeprefix("livetable-")
        return (
            f"livetable/{table}/request/#",
            f"livetable/{table}/request/supervisor/alice/enter_card",
            "alice",
        )
    return f"livetable/t1/response/{victim}", f"livetable/t1/response/{victim}", "livetable-t1"


def _overlapping(topic: str) -> str:
    """A filter other than the victim's own that matches ``topic`` too: one more such
    subscription in the victim's session would deliver each message twice."""
    words = topic.split("/")
    return "/".join([words[0], "+", *words[2:]])


@needs_namespace
def test_no_account_kicks_another_off_the_broker(clients: Clients) -> None:
    """Each account connected; every other account connects with its client id (MQTT 5 and
    3.1.1): the first stays connected and still receives what is sent to it."""
    for victim in ACCOUNTS:
        subscription, topic, publisher = _traffic_for(victim)
        clients.connect("victim", victim, victim, clean=True, protocol="5")
        assert clients.remote.call("subscribe", "victim", topic=subscription)["granted"]
        for impostor in ACCOUNTS:
            if impostor == victim:
                continue
            for protocol in ("5", "3.1.1"):
                clients.connect("impostor", impostor, victim, clean=True, protocol=protocol)
                clients.remote.call("close", "impostor")
        payload = f"{victim} still here"
        clients.publish_once(publisher, topic, payload)
        got = clients.remote.call(
            "messages", "victim", until=payload, timeout=MESSAGE_TIMEOUT_S, quiet=QUIET_S
        )["messages"]
        reasons = clients.remote.call("disconnects", "victim")["reasons"]
        clients.remote.call("close", "victim")
        assert reasons == [], (
            f"{victim} on {clients.port} was disconnected:\n{clients.broker.log()}"
        )
        assert got == [[topic, payload]], victim


@needs_namespace
def test_no_account_resumes_another_accounts_session(clients: Clients) -> None:
    """Each account leaves a persistent session with a message queued in it; every other
    account connects with its client id, persistent too, and subscribes. The account comes
    back to its own session: the queued message once, no subscription but its own."""
    for victim in ACCOUNTS:
        subscription, topic, publisher = _traffic_for(victim)
        clients.connect("victim", victim, victim, clean=True)  # no session from before
        clients.remote.call("close", "victim")
        clients.connect("victim", victim, victim, clean=False)
        assert clients.remote.call("subscribe", "victim", topic=subscription)["granted"]
        clients.remote.call("close", "victim")
        queued = f"queued for {victim}"
        clients.publish_once(publisher, topic, queued)
        for impostor in ACCOUNTS:
            if impostor == victim:
                continue
            clients.connect("impostor", impostor, victim, clean=False)
            # Its SUBACK follows whatever a resumed session had queued for it.
            clients.remote.call("subscribe", "impostor", topic=_overlapping(topic))
            clients.remote.call("close", "impostor")
        back = clients.connect("victim", victim, victim, clean=False)
        assert back["session_present"], f"{victim}'s session is gone"
        later = f"later for {victim}"
        clients.publish_once(publisher, topic, later)
        got = clients.remote.call(
            "messages", "victim", until=later, timeout=MESSAGE_TIMEOUT_S, quiet=QUIET_S
        )["messages"]
        clients.remote.call("close", "victim")
        assert got == [[topic, queued], [topic, later]], f"{victim} on {clients.port}"


@needs_namespace
def test_a_reload_with_a_new_account_keeps_the_client_ids(clients: Clients) -> None:
    """docs/install.md 3.5: a new supervisor's account and ACL block, then `systemctl reload
    mosquitto` (SIGHUP). The new account connects, and neither it nor another account takes
    the table's client id afterwards."""
    etc = clients.broker.root / "etc/mosquitto"
    carol = f"carol-{uuid.uuid4().hex[:12]}"
    write_password_file(etc / "livetable.passwd", {"carol": ("carol", carol)})
    alice_block = (SHIPPED / "livetable.acl").read_text().split("\nuser alice\n")[1]
    alice_block = alice_block.split("\n\n")[0]
    with (etc / "livetable.acl").open("a") as acl:
        acl.write("\nuser carol\n" + alice_block.replace("/alice/", "/carol/") + "\n")
    clients.broker.passwords["carol"] = carol
    clients.broker.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + START_TIMEOUT_S
    while "Reloading config." not in clients.broker.log():
        assert time.monotonic() < deadline, clients.broker.log()
        time.sleep(0.05)
    clients.connect("table", "livetable-t1", "livetable-t1", clean=True, protocol="5")
    assert clients.remote.call("subscribe", "table", topic="livetable/t1/request/#")["granted"]
    for impostor in ("carol", "viewer", "platform"):
        clients.connect("impostor", impostor, "livetable-t1", clean=True, protocol="5")
        clients.remote.call("close", "impostor")
    topic, payload = "livetable/t1/request/supervisor/carol/pause", "carol's pause"
    clients.publish_once("carol", topic, payload)
    got = clients.remote.call(
        "messages", "table", until=payload, timeout=MESSAGE_TIMEOUT_S, quiet=QUIET_S
    )["messages"]
    reasons = clients.remote.call("disconnects", "table")["reasons"]
    clients.remote.call("close", "table")
    assert reasons == [], clients.broker.log()
    assert got == [[topic, payload]]


DEBIAN_CONF = Path("/etc/mosquitto/mosquitto.conf")
DEBIAN_UNIT = Path("/lib/systemd/system/mosquitto.service")
INSTALL_DOC = REPO_ROOT / "docs" / "install.md"


def _settings(text: str, names: tuple[str, ...]) -> dict[str, str]:
    words = (line.split(maxsplit=1) for line in text.splitlines() if line.strip())
    return {word[0]: word[1].strip() for word in words if word[0] in names and len(word) == 2}


def test_it_keeps_debians_layout_where_debians_unit_reads_it() -> None:
    """docs/install.md installs livetable.conf over Debian's mosquitto.conf: the unit must
    read it there, and its pid file, state and conf.d must be Debian's (the unit makes
    /run/mosquitto for the pid file; the package owns /var/lib/mosquitto)."""
    if not DEBIAN_UNIT.exists() or "livetable" in DEBIAN_CONF.read_text(errors="replace"):
        pytest.skip("Debian's mosquitto package, with its own mosquitto.conf, is not here")
    unit = DEBIAN_UNIT.read_text()
    assert f"ExecStart=/usr/sbin/mosquitto -c {DEBIAN_CONF}" in unit
    assert "/run/mosquitto" in unit
    assert f"| `systemd/mosquitto/livetable.conf` | `{DEBIAN_CONF}`" in INSTALL_DOC.read_text()
    names = ("pid_file", "persistence_location", "include_dir")
    shipped = _settings((SHIPPED / "livetable.conf").read_text(), names)
    assert shipped == _settings(DEBIAN_CONF.read_text(), names)
    assert set(shipped) == set(names)
