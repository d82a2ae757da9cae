"""The mosquitto_sub / mosquitto_pub lines a person is given work against the studio broker.

The shipped broker configuration (systemd/mosquitto/livetable.conf) refuses a client that
sends no client id, and mosquitto_sub sends none unless told (``-i``): every documented line
gives one, and the account to log in with. The demo's printed watch line is run here, as a
person would paste it, against a real mosquitto with the shipped configuration and ACL, and
sees a table's retained state; docs/install.md's TLS line is run by
tests/install/test_broker_tls_walkthrough.py.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import uuid
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from controller.tools.demo import BrokerAddress
from tests.broker.test_studio_broker_config import StudioBroker, studio_broker  # noqa: F401 (a fixture)

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted(
    [
        *(REPO_ROOT / "docs").glob("*.md"),
        REPO_ROOT / "README.md",
        *(REPO_ROOT / "systemd" / "mosquitto").iterdir(),
    ]
)
# A command, not a mention: the tool's name followed by an option.
COMMAND = re.compile(r"mosquitto_(?:sub|pub) +-")
TIMEOUT_S = 30.0


def documented_commands() -> list[tuple[str, str]]:
    """(file, command) for every mosquitto_sub/pub command in the documents, its continuation
    lines (ending in a backslash) joined to it."""
    found = []
    for path in DOCUMENTS:
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            match = COMMAND.search(line)
            if match is None:
                continue
            command = line[match.start() :]
            following = number
            while command.rstrip().endswith("\\") and following + 1 < len(lines):
                following += 1
                command = command.rstrip()[:-1] + " " + lines[following].strip()
            found.append((f"{path.relative_to(REPO_ROOT)}:{number + 1}", command.split("`")[0]))
    return found


def test_the_documents_have_mosquitto_commands_to_check() -> None:
    files = {where.split(":")[0] for where, _ in documented_commands()}
    assert "docs/install.md" in files, files


@pytest.mark.parametrize(
    ("where", "command"), documented_commands(), ids=[w for w, _ in documented_commands()]
)
def test_every_documented_command_names_its_client_and_account(where: str, command: str) -> None:
    words = shlex.split(command.replace("\\", " "))
    assert "-i" in words or "--id" in words, f"{where}: no client id: {command}"
    assert "-u" in words or "--username" in words, f"{where}: no account: {command}"


def _publish_retained_state(studio: StudioBroker) -> dict[str, object]:
    """Table t1's account publishes a retained state, as its daemon does."""
    state = {"table": "t1", "seq": 7, "marker": uuid.uuid4().hex}
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="livetable-t1")
    client.username_pw_set("livetable-t1", studio.passwords["livetable-t1"])
    client.connect(studio.broker.host, studio.broker.port)
    client.loop_start()
    try:
        info = client.publish("livetable/t1/state", json.dumps(state), qos=1, retain=True)
        info.wait_for_publish(TIMEOUT_S)
        assert info.is_published()
    finally:
        client.loop_stop()
        client.disconnect()
    return state


def _run(words: list[str]) -> subprocess.CompletedProcess[str]:
    # -C 1 -W: take one message and exit, and never wait for ever (what a person's Ctrl-C does).
    return subprocess.run(
        [*words, "-C", "1", "-W", str(int(TIMEOUT_S))],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S + 10,
        check=False,
    )


def test_the_demos_watch_line_sees_a_retained_state_on_the_studio_broker(
    studio_broker: StudioBroker,  # noqa: F811 (the fixture imported above)
) -> None:
    state = _publish_retained_state(studio_broker)
    broker = BrokerAddress(
        studio_broker.broker.host,
        studio_broker.broker.port,
        ("viewer", studio_broker.passwords["viewer"]),
    )
    words = shlex.split(broker.watch_command())
    done = _run(words)
    assert done.returncode == 0, done.stderr
    topic, _, payload = done.stdout.strip().partition(" ")
    assert topic == "livetable/t1/state" and json.loads(payload) == state, done.stdout

    # Why the id is there: the same line without it is refused by the studio broker.
    at = words.index("-i")
    without_id = words[:at] + words[at + 2 :]
    refused = _run(without_id)
    assert refused.returncode != 0 and "identifier rejected" in refused.stderr, refused


def test_the_demos_watch_line_without_an_account_gives_an_id_too(
    mqtt_broker: tuple[str, int],
) -> None:
    host, port = mqtt_broker
    words = shlex.split(BrokerAddress(host, port).watch_command())
    assert words[words.index("-i") + 1] == "livetable-watch"
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="publisher")
    client.connect(host, port)
    client.loop_start()
    try:
        info = client.publish("livetable/t9/state", '{"table": "t9"}', qos=1, retain=True)
        info.wait_for_publish(TIMEOUT_S)
    finally:
        client.loop_stop()
        client.disconnect()
    done = _run(words)
    assert done.returncode == 0 and done.stdout.strip() == 'livetable/t9/state {"table": "t9"}', (
        done
    )
