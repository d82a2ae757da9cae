"""What a healthy ``livetable run`` says at the default log level (no ``-v``): one line as
it starts (the table, its game, shoe, broker and journal, and how many rows it replayed) and
one once it is ready, and nothing else; ``-v`` still adds the rest."""

from __future__ import annotations

import re
from pathlib import Path

from controller.client.api_client import Account, ApiClient
from simulators.shoe.simulator import ShoeSimulator
from tests.support.daemon import DaemonProcess, write_config
from tests.support.wait import wait_until

TIMEOUT_S = 30.0
LINE = re.compile(r"^\S+ \S+ (?P<level>[A-Z]+) (?P<logger>\S+): (?P<message>.*)$")


def _messages(log: str) -> list[tuple[str, str]]:
    """(level, message) of every line of a log in the terminal format."""
    found = []
    for line in log.splitlines():
        match = LINE.match(line)
        assert match is not None, f"not one record per line: {line!r}"
        found.append((match["level"], match["message"]))
    return found


def _online(port: int) -> None:
    client = ApiClient("127.0.0.1", port, "t1", Account("viewer"))
    try:
        assert client.wait_connected(), client.refused
        wait_until(
            lambda: client.availability == "online" and client.state is not None,
            TIMEOUT_S,
            "the table online",
        )
    finally:
        client.close()


def _run(tmp_path: Path, port: int, verbose: int, starts: int = 1) -> list[tuple[str, str]]:
    with ShoeSimulator("angel-eye", tmp_path / "shoe", seed=3):
        config = write_config(tmp_path / "t1.toml", shoe_port=tmp_path / "shoe", broker_port=port)
        daemon = DaemonProcess(config, tmp_path / "daemon.log", verbose=verbose)
        try:
            for start in range(1, starts + 1):
                daemon.start()
                wait_until(
                    lambda n=start: daemon.log().count("running: ready") >= n or not daemon.alive(),
                    TIMEOUT_S,
                    "the ready line",
                )
                assert daemon.alive(), daemon.log()[-3000:]
                _online(port)
                assert daemon.stop() == 0, daemon.log()[-3000:]
        finally:
            daemon.stop()
    return _messages(daemon.log())


def test_the_default_level_says_start_ready_and_closing_and_nothing_else(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    _host, port = mqtt_broker
    messages = _run(tmp_path, port, verbose=0)
    journal = tmp_path / "t1.journal"
    shoe = tmp_path / "shoe"
    assert messages == [
        (
            "INFO",
            f"table t1 starting: baccarat (traditional), shoe {shoe} (angel-eye), "
            f"broker 127.0.0.1:{port} (MQTT 5, client livetable-t1, anonymous), journal {journal} "
            "(0 rows replayed)",
        ),
        ("INFO", "table t1 running: ready, 0 event(s) published so far"),
        # Stopped (SIGTERM), a table closes between rounds: it says so, and when it stops.
        (
            "INFO",
            "table t1 closing: no round in play, then it stops (within 3 s; a second SIGTERM "
            "stops it now)",
        ),
    ], messages


def test_a_restart_says_how_many_rows_it_replayed(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    _host, port = mqtt_broker
    messages = _run(tmp_path, port, verbose=0, starts=2)
    starting = [text for level, text in messages if text.startswith("table t1 starting")]
    assert len(starting) == 2, messages
    replayed = re.search(r"\((\d+) rows replayed\)$", starting[1])
    assert replayed is not None and int(replayed[1]) > 0, starting
    assert starting[0].endswith("(0 rows replayed)"), starting


def test_verbose_still_says_more(tmp_path: Path, mqtt_broker: tuple[str, int]) -> None:
    _host, port = mqtt_broker
    messages = _run(tmp_path, port, verbose=1)
    texts = [text for _level, text in messages]
    assert any(text.startswith("table t1 starting:") for text in texts), texts
    assert any(text.startswith("connected to the broker") for text in texts), texts
