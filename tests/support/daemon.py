"""A real table daemon for tests: ``livetable run`` as a subprocess, its shoe a simulator on a
real pty, its broker a real mosquitto, and an independent check of what it published.

:func:`write_config` writes a table's TOML file; :class:`DaemonProcess` starts, kills and
restarts the daemon (both the demo's, from ``simulators/``, with the tests' defaults);
:func:`check_stream` recomputes every settled round from the cards and decisions seen on
``.../events`` with the rules engine and compares the published results.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import simulators.daemon_process
from controller.client.api_client import Account, ApiClient
from controller.games.registry import game_spec
from simulators.mqtt_bots import TableBots
from simulators.shoe.simulator import ShoeSimulator
from simulators.table_config import write_table_config

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


# A test table: t1, baccarat, short windows (write_config's defaults).
TEST_TABLE: dict[str, Any] = {
    "table_id": "t1",
    "game": "baccarat",
    "betting_s": 0.2,
    "decision_s": 2.0,
    "dealer_idle_s": 5.0,
    # A test that stops a table during a round (its bots gone) waits this long for the
    # round before the daemon stops anyway; the tests of that wait set their own.
    "stop_timeout_s": 3.0,
    "variant": "traditional",
}


def write_config(path: Path, *, extra_mqtt: str = "", **config: Any) -> Path:
    """A test table's TOML file: :func:`simulators.table_config.write_table_config` (the
    demo's writer) with ``config`` over :data:`TEST_TABLE`, a broker on 127.0.0.1.
    ``extra_mqtt``: TOML text after ``[mqtt]`` (e.g. ``[mqtt.tls]``)."""
    return write_table_config(path, **{**TEST_TABLE, **config}, extra=extra_mqtt)


@dataclass
class DaemonProcess(simulators.daemon_process.DaemonProcess):
    """``livetable run -v --config CONFIG`` as a child process, from the repository's root,
    logging to a file (:class:`simulators.daemon_process.DaemonProcess`, the demo's)."""

    cwd: Path | None = REPO_ROOT
    verbose: int = 1


def gaps(seqs: list[int]) -> list[tuple[int, int]]:
    """Where a series that should run 1, 2, 3, ... does not."""
    found = []
    expected = 1
    for seq in seqs:
        if seq != expected:
            found.append((expected, seq))
        expected = seq + 1
    return found


def unique_by_seq(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop repeats by ``seq`` (QoS 1 delivers at least once), keeping the order of seq."""
    by_seq: dict[int, dict[str, Any]] = {}
    for event in events:
        if event["seq"] in by_seq:
            assert by_seq[event["seq"]] == event, f"event {event['seq']} differs on repeat"
        by_seq[event["seq"]] = event
    return [by_seq[seq] for seq in sorted(by_seq)]


def check_stream(events: list[dict[str, Any]], game: str, variant: str | None = None) -> int:
    """Recompute every settled round of ``events`` (unique, in seq order) with the rules
    engine, from the cards and decisions published; AssertionError on the first
    difference. Returns the number of rounds checked."""
    spec = game_spec(game)
    rounds: dict[int, dict[str, Any]] = {}
    checked = 0
    for event in events:
        data = event["data"]
        kind = event["type"]
        if kind == "round_opened":
            rounds[data["round_id"]] = {"number": data["round_number"], "steps": []}
        elif kind in ("card_dealt", "decision_taken") and data.get("round_id") in rounds:
            rounds[data["round_id"]]["steps"].append((kind, data))
        elif kind == "round_voided":
            rounds.pop(data["round_id"], None)
        elif kind == "round_settled" and data["round_id"] in rounds:
            played = rounds.pop(data["round_id"])
            _check_round(spec, variant, played, data["result"], data["round_id"])
            checked += 1
    return checked


def _check_round(
    spec: Any, variant: str | None, played: dict[str, Any], result: dict[str, Any], round_id: int
) -> None:
    from controller.kernel.cards import parse_card
    from controller.service.wire import finished_hands

    steps = played["steps"]
    dealer_faces = list(result.get("dealer", {}).get("cards", []))
    live = spec.new_round(played["number"], None, variant)
    dealer_index = 0
    for kind, data in steps:
        if kind == "card_dealt":
            face = data.get("card")
            if data["position"] == "dealer":
                if face is None:  # the hole card: its face is in the result
                    face = dealer_faces[dealer_index]
                dealer_index += 1
            assert face is not None, f"round {round_id}: a face-down card with no reveal"
            live.deal(parse_card(face))
        else:
            live.decide(data["box"], data["hand"], data["decision"])
    assert live.complete, f"round {round_id}: the published cards do not finish the round"
    # As the wire publishes it: a hand a dealer blackjack ended unplayed is stood there.
    expected = finished_hands(dict(live.settlement()))
    side_bets = expected.get("side_bets")
    if isinstance(side_bets, dict):
        offered = set(spec.available_bets(played["number"]))
        expected["side_bets"] = {bet: net for bet, net in side_bets.items() if bet in offered}
    import json

    assert json.loads(json.dumps(expected)) == result, f"round {round_id}: result differs"


class SimulatedTable:
    """A daemon, its shoe, and the people around it, all over one broker."""

    def __init__(
        self,
        workdir: Path,
        host: str,
        port: int,
        game: str,
        rounds: int,
        *,
        subscriber_id: str | None = None,
        **config: Any,
    ) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.game = game
        self.shoe = ShoeSimulator("angel-eye", workdir / "shoe", seed=11, cut_card_depth=60)
        self.shoe.__enter__()
        self.config_path = write_config(
            workdir / "t1.toml", game=game, shoe_port=workdir / "shoe", broker_port=port, **config
        )
        config_path = self.config_path
        self.daemon = DaemonProcess(config_path, workdir / "daemon.log")
        # The independent subscriber: with a client id, a persistent session (the broker
        # keeps its QoS 1 messages while it is away).
        self.viewer = ApiClient(
            host,
            port,
            "t1",
            Account("viewer", "watcher"),
            client_id=subscriber_id,
            clean=subscriber_id is None,
        )
        self.platform = ApiClient(host, port, "t1", Account("platform", "platform"))
        self.supervisor = ApiClient(host, port, "t1", Account("supervisor", "alice"))
        for client in (self.viewer, self.platform, self.supervisor):
            assert client.wait_connected(), "the broker refused a client"
        self.raw: list[tuple[str, bytes]] = []
        self.viewer.client.subscribe("livetable/t1/#", qos=1)
        self.viewer.client.on_message = self._tap(self.viewer.client.on_message)
        self.bots = TableBots(
            self.platform,
            self.supervisor,
            draw=self._draw,
            shuffle=self.shoe.new_shoe,
            rounds=rounds,
        )

    def _tap(self, inner: Any) -> Any:
        def on_message(client: Any, userdata: Any, message: Any) -> None:
            self.raw.append((message.topic, bytes(message.payload)))
            inner(client, userdata, message)

        return on_message

    def _draw(self) -> None:
        self.shoe.draw()

    def close(self) -> None:
        self.bots.stop()
        self.daemon.stop()
        for client in (self.viewer, self.platform, self.supervisor):
            client.close()
        self.shoe.__exit__(None, None, None)
