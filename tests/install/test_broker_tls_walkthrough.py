"""docs/install.md's broker and TLS walk-through runs as written, and ends with a table online
over TLS and a round played.

The page marks what this test runs: each fenced block between ``<!-- install-test: KIND -->``
and ``<!-- install-test: end -->``. ``settings`` is the page's shell variables (the test
gives its own values, under a temporary folder, for the same names); every ``run`` block runs
in bash, in the page's order, with those variables, and is answered on its standard input
as a person would answer it (each password that mosquitto_passwd asks twice and ``read``
once); ``mqtt`` is the table's ``[mqtt]`` section over TLS.

Between the blocks of section 3 and the check list the test does what the page leaves to
systemd and to an editor: it starts mosquitto on the configuration the page installed (the
shipped livetable.conf, its paths moved under the temporary folder, its TLS listener on a
free loopback port), writes the table's file from the example the page names with the
page's ``[mqtt]`` section, and starts ``livetable run`` on it with a simulated shoe. After
the round, the broker comes back with 3.4's ``require_certificate true``: the table is online
again with its client certificate, and a client without one is refused. Not run:
``apt-get``, ``systemctl``, ``journalctl`` and ``scp`` (the unblocked lines of the page), and
the ``livetable`` group, which systemd-sysusers makes (``LIVETABLE_GROUP`` is root here).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.client.api_client import Account, ApiClient
from controller.tools.files_cli import shipped_folder
from simulators.mqtt_bots import TableBots
from simulators.shoe.simulator import ShoeSimulator
from tests.support.broker import BrokerProcess, free_port, start_broker
from tests.support.daemon import REPO_ROOT, DaemonProcess
from tests.support.wait import wait_until

DOC = REPO_ROOT / "docs" / "install.md"
EXAMPLE = REPO_ROOT / "systemd" / "examples" / "baccarat-angel-eye.toml"
BLOCK = re.compile(
    r"<!-- install-test: (?P<kind>[\w-]+) -->\s*```(?P<lang>\w*)\n(?P<body>.*?)```\s*"
    r"<!-- install-test: end -->",
    re.DOTALL,
)
TIMEOUT_S = 60.0
ROUND_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Block:
    kind: str
    lang: str
    body: str


def doc_blocks() -> list[Block]:
    blocks = []
    for match in BLOCK.finditer(DOC.read_text()):
        body = textwrap.dedent(match["body"])
        # A block inside a list item is indented: its fence's indent is the body's too.
        blocks.append(Block(match["kind"], match["lang"], body))
    return blocks


def doc_settings(block: Block) -> dict[str, str]:
    """NAME=value lines of the settings block (a comment may follow the value)."""
    settings = {}
    for line in block.body.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, value = line.partition("=")
            settings[name] = value
    return settings


def answers(body: str, variables: dict[str, str], passwords: dict[str, str]) -> str:
    """What a person types into ``body``: each mosquitto_passwd password twice, each
    ``read`` password once, in the order the lines ask."""
    typed = []
    for line in body.splitlines():
        line = line.split("#", 1)[0]
        for name, value in variables.items():
            line = line.replace(f"${name}", value)
        passwd = re.match(r"\s*mosquitto_passwd (?!-)\S+ \"?([\w.-]+)\"?\s*$", line)
        prompt = re.search(r"read -rs -p \"password of ([\w.-]+): \"", line)
        if passwd is not None:
            typed += [passwords[passwd[1]]] * 2
        elif prompt is not None:
            typed.append(passwords[prompt[1]])
    return "".join(f"{word}\n" for word in typed)


def studio_config(installed: str, etc: Path, state: Path, tls_port: int) -> str:
    """The installed mosquitto.conf as this test runs it: /etc/mosquitto is ``etc``;
    start_broker gives the loopback listener and the log; the TLS listener is on
    ``tls_port`` of 127.0.0.1. Every other line as shipped."""
    out: list[str] = []
    seen: set[str] = set()
    for line in installed.replace("/etc/mosquitto/", f"{etc}/").splitlines():
        words = line.split()
        directive = words[0] if words and not words[0].startswith("#") else ""
        seen.add(directive)
        if directive in ("pid_file", "log_dest", "log_timestamp", "include_dir"):
            continue
        if directive == "listener" and words[1:] == ["1883", "127.0.0.1"]:
            continue
        if directive == "listener" and words[1:] == ["8883"]:
            line = f"listener {tls_port} 127.0.0.1"
        elif directive == "persistence_location":
            line = f"persistence_location {state}/"
        out.append(line)
    assert {"listener", "cafile", "certfile", "keyfile", "password_file", "acl_file"} <= seen
    return "\n".join(out) + "\n"


def table_config(mqtt: Block, doc: dict[str, str], variables: dict[str, str], work: Path) -> str:
    """The example the page starts from, with the page's [mqtt] section for TLS; the shoe,
    the journal and a short betting window are the test's."""
    table = EXAMPLE.read_text().split("\n[mqtt]", 1)[0]
    table = re.sub(r'(?m)^port = ".*"', f'port = "{work / "shoe"}"', table)
    table = re.sub(r'(?m)^journal_path = ".*"', f'journal_path = "{work / "t1.journal"}"', table)
    table = re.sub(r"(?m)^betting_s = .*", "betting_s = 1.0", table)
    section = mqtt.body
    for name in ("LIVETABLE_ETC", "BROKER_HOST"):
        assert doc[name] in section, name
        section = section.replace(doc[name], variables[name])
    assert f"port = {doc['BROKER_PORT']}" in section
    section = section.replace(f"port = {doc['BROKER_PORT']}", f"port = {variables['BROKER_PORT']}")
    return f"{table}\n{section}"


def run_block(
    block: Block, variables: dict[str, str], passwords: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    script = "".join(f"{name}={value}\n" for name, value in variables.items()) + block.body
    # The answers from a file, not a pipe: a terminal hands each program only its own line,
    # and so does a file (a program's buffered read of a pipe would take the next one's too).
    typed = cwd / "typed"
    typed.write_text(answers(block.body, variables, passwords))
    with typed.open() as stdin:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            stdin=stdin,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S + 30,
            check=False,
        )
    typed.unlink()
    assert done.returncode == 0, f"{block.body}\nexit {done.returncode}:\n{done.stderr}"
    return done


@pytest.fixture
def brokers() -> Iterator[list[BrokerProcess]]:
    started: list[BrokerProcess] = []
    yield started
    for broker in started:
        died_with = broker.stop()
        assert died_with is None, f"mosquitto died (exit {died_with}):\n{broker.log()}"


def test_the_page_defines_the_settings_this_test_gives() -> None:
    (settings,) = [block for block in doc_blocks() if block.kind == "settings"]
    doc = doc_settings(settings)
    assert set(doc) == {
        "LIVETABLE_FILES",
        "MOSQUITTO_ETC",
        "LIVETABLE_ETC",
        "LIVETABLE_GROUP",
        "CA_DIR",
        "BROKER_HOST",
        "BROKER_IP",
        "BROKER_PORT",
        "TABLE",
    }
    # The paths the shipped files name, which the test moves.
    assert doc["MOSQUITTO_ETC"] == "/etc/mosquitto" and doc["LIVETABLE_ETC"] == "/etc/livetable"
    assert doc["LIVETABLE_FILES"] == "/opt/livetable/systemd"  # the link section 1 makes
    assert doc["BROKER_PORT"] == "8883" and doc["TABLE"] == "t1"
    kinds = [block.kind for block in doc_blocks()]
    assert kinds.count("mqtt") == 1 and kinds.count("run") >= 8, kinds


def test_from_the_page_to_a_round_played_over_tls(
    tmp_path: Path, brokers: list[BrokerProcess]
) -> None:
    blocks = doc_blocks()
    doc = doc_settings(next(block for block in blocks if block.kind == "settings"))
    etc = tmp_path / "etc" / "mosquitto"
    etc.mkdir(parents=True)  # the mosquitto package makes it
    variables = {
        # The folder `livetable files` names: in this checkout, the repository's systemd/.
        "LIVETABLE_FILES": str(shipped_folder()),
        "MOSQUITTO_ETC": str(etc),
        "LIVETABLE_ETC": str(tmp_path / "etc" / "livetable"),
        "LIVETABLE_GROUP": "root",
        "CA_DIR": str(tmp_path / "root" / "livetable-ca"),
        "BROKER_HOST": "localhost",
        "BROKER_IP": "127.0.0.1",
        "BROKER_PORT": str(free_port()),
        "TABLE": "t1",
    }
    passwords = {
        name: f"{name}-{uuid.uuid4().hex[:12]}"
        for name in ("livetable-t1", "platform", "alice", "viewer")
    }
    work = tmp_path / "table"
    work.mkdir()
    ca = Path(variables["LIVETABLE_ETC"]) / "ca.pem"
    outputs: list[str] = []
    clients: list[ApiClient] = []
    with ShoeSimulator("angel-eye", work / "shoe", seed=17) as shoe:
        daemon: DaemonProcess | None = None
        try:
            for block in blocks:
                if block.kind == "run":
                    done = run_block(block, variables, passwords, tmp_path)
                    outputs.append(done.stdout + done.stderr)
                elif block.kind == "mqtt":
                    # Section 3 is done: what systemd and the editor do, then the check list.
                    daemon = _start_the_table(
                        block, doc, variables, work, etc, tmp_path, brokers, passwords
                    )
                    clients += _wait_online(variables, passwords, ca, daemon)
            assert daemon is not None, "the page has no [mqtt] block"

            # The check list's lines said what the page says they say.
            checks = "\n".join(outputs[-3:])
            assert "Verification: OK" in checks, checks
            assert f"{variables['LIVETABLE_ETC']}/t1.pem: OK" in checks, checks
            seen = dict(line.split(" ", 1) for line in outputs[-1].splitlines() if " " in line)
            assert seen.get("livetable/t1/availability") == "online", outputs[-1]
            state = json.loads(seen["livetable/t1/state"])
            assert state["table"] == "t1" and state["devices"]["shoe_online"] is True

            # And the table plays a round over TLS.
            platform, supervisor = clients
            bots = TableBots(platform, supervisor, draw=shoe.draw, shuffle=shoe.new_shoe, rounds=1)
            bots.start()
            try:
                wait_until(
                    lambda: bots.rounds_settled >= 1 or not daemon.alive(),
                    ROUND_TIMEOUT_S,
                    "a round settled",
                )
            finally:
                bots.stop()
            assert daemon.alive(), daemon.log()[-3000:]
            assert bots.rounds_settled >= 1 and not bots.errors, bots.errors[:5]
            log = daemon.log()
            assert f"broker localhost:{variables['BROKER_PORT']} (MQTT 5, TLS" in log, log
            assert " WARNING " not in log and " ERROR " not in log, log

            # 3.4's option: a broker that demands a client certificate takes the table's.
            _require_client_certificates(brokers, etc, tmp_path, variables, passwords)
        finally:
            for client in clients:
                client.close()
            if daemon is not None:
                daemon.stop()


def _start_the_table(
    mqtt: Block,
    doc: dict[str, str],
    variables: dict[str, str],
    work: Path,
    etc: Path,
    tmp_path: Path,
    brokers: list[BrokerProcess],
    passwords: dict[str, str],
) -> DaemonProcess:
    """``systemctl restart mosquitto`` and ``systemctl enable --now livetable@t1``, here."""
    state = tmp_path / "var" / "lib" / "mosquitto"
    state.mkdir(parents=True)
    tls_port = int(variables["BROKER_PORT"])
    installed = (etc / "mosquitto.conf").read_text()
    broker = start_broker(
        tmp_path / "broker", extra_config=studio_config(installed, etc, state, tls_port)
    )
    brokers.append(broker)

    def listening() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", tls_port), timeout=0.5):
                return True
        except OSError:
            assert broker.alive(), broker.log()
            return False

    wait_until(listening, TIMEOUT_S, "mosquitto's TLS listener")
    config = Path(variables["LIVETABLE_ETC"]) / "t1.toml"
    config.write_text(table_config(mqtt, doc, variables, work))
    daemon = DaemonProcess(config, work / "daemon.log", verbose=0)
    daemon.start()
    return daemon


def _wait_online(
    variables: dict[str, str], passwords: dict[str, str], ca: Path, daemon: DaemonProcess
) -> list[ApiClient]:
    """The platform and the supervisor over TLS, once the table is online with its shoe."""
    port = int(variables["BROKER_PORT"])
    clients = [
        ApiClient("localhost", port, "t1", Account(role, name, passwords[name]), tls_ca=str(ca))
        for role, name in (("platform", "platform"), ("supervisor", "alice"))
    ]
    platform = clients[0]
    assert platform.wait_connected(), platform.refused

    def online() -> bool:
        assert daemon.alive(), daemon.log()[-3000:]
        state = platform.state
        return platform.availability == "online" and bool(state and state["devices"]["shoe_online"])

    wait_until(online, TIMEOUT_S, "the table online over TLS")
    assert clients[1].wait_connected(), clients[1].refused
    return clients


def _require_client_certificates(
    brokers: list[BrokerProcess],
    etc: Path,
    tmp_path: Path,
    variables: dict[str, str],
    passwords: dict[str, str],
) -> None:
    """The broker again, with ``require_certificate true`` under its TLS listener and no
    retained message kept: the table reconnects with its certificate of 3.4 (its
    availability is ``online`` again), and a client without one is refused."""
    old = brokers.pop()
    assert old.stop() is None, old.log()
    state = tmp_path / "var" / "lib" / "mosquitto-again"
    state.mkdir(parents=True)
    tls_port = int(variables["BROKER_PORT"])
    installed = (etc / "mosquitto.conf").read_text()
    config = studio_config(installed, etc, state, tls_port).replace(
        f"listener {tls_port} 127.0.0.1\n",
        f"listener {tls_port} 127.0.0.1\nrequire_certificate true\n",
    )
    assert "require_certificate true" in config
    brokers.append(start_broker(tmp_path / "broker-again", extra_config=config))
    livetable_etc = Path(variables["LIVETABLE_ETC"])
    ca_dir = Path(variables["CA_DIR"])
    sub = [
        "mosquitto_sub",
        *("-h", "localhost", "-p", str(tls_port), "--cafile", str(livetable_etc / "ca.pem")),
        *("-i", "viewer", "-u", "viewer", "-P", passwords["viewer"]),
        *("-t", "livetable/t1/availability", "-C", "1", "-W", "5"),
    ]
    # The viewer's own certificate, made as 3.4 makes the table's.
    viewer = Block("run", "sh", next(b.body for b in doc_blocks() if "clientAuth" in b.body))
    run_block(viewer, {**variables, "TABLE": "viewer"}, passwords, tmp_path)
    with_certificate = [
        *sub,
        "--cert",
        str(ca_dir / "viewer.pem"),
        "--key",
        str(ca_dir / "viewer.key"),
    ]

    def table_back() -> bool:
        done = subprocess.run(with_certificate, capture_output=True, text=True, timeout=30)
        return done.stdout.strip() == "online"

    wait_until(table_back, TIMEOUT_S, "the table online again, with its certificate")
    refused = subprocess.run(sub, capture_output=True, text=True, timeout=30, check=False)
    assert refused.returncode != 0 and refused.stdout == "", refused
