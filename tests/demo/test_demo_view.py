"""What ``livetable demo`` shows of a settled round and of the pauses, from what its
subscriber receives.

The settlements are real: rounds played on the table's state machine
(:mod:`tests.table.driver`), their ``round_settled`` effect made into the ``.../events``
message the daemon publishes (:mod:`controller.service.wire`) and fed to the demo's watch as its
subscriber would. The pauses come from a real daemon, a real broker and the demo's own dealer,
platform and supervisor (:class:`simulators.mqtt_bots.TableBots` with
:class:`simulators.dealer.DealerSimulator`), with one fault in the shoe.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.layout import Layout

from controller.kernel.cards import parse_card
from controller.service.wire import encode, event_message
from controller.table.effects import PublishEvent
from controller.tools.demo_view import (
    DemoWatch,
    bet_outcomes,
    describe_event,
    summary_line,
    table_panel,
)
from simulators.dealer import DealerSimulator
from simulators.mqtt_bots import TableBots
from simulators.shoe.simulator import FaultPlan, ShoeSimulator
from tests.support.daemon import SimulatedTable, check_stream, unique_by_seq
from tests.support.wait import wait_until
from tests.table.driver import Driver, deal_until_settled, table_for

TABLE = "t1"


def watched(driver: Driver) -> DemoWatch:
    """The demo's watch, fed every event the table published, as MQTT messages."""
    watch = DemoWatch(tables=[TABLE])
    events = [effect for effect in driver.effects if isinstance(effect, PublishEvent)]
    for seq, effect in enumerate(events, start=1):
        message = event_message(seq, TABLE, driver.now, effect)
        watch.handle(f"livetable/{TABLE}/events", encode(message))
    return watch


def settled_result(driver: Driver) -> dict[str, Any]:
    """The last round's result as the demo received it."""
    result = watched(driver).tables[TABLE].result
    assert result is not None and "result" in result, result
    return result["result"]


def panel_text(driver: Driver) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(table_panel(watched(driver).tables[TABLE], now=driver.now))
    return console.export_text()


# -- bet outcomes -------------------------------------------------------------------------------


def test_baccarat_shows_every_bet_of_the_round_side_bets_included() -> None:
    table = table_for("baccarat")
    table.open_and_close_betting()
    table.draw("4S", "TD", "4H", "9C")  # player 4S 4H (8), banker TD 9C (9)
    result = settled_result(table)
    outcomes = bet_outcomes(result)
    assert outcomes == [(bet, float(net)) for bet, net in result["bets"].items()]
    (opened,) = table.published_events("round_opened")
    # Every bet offered, once (the wire sorts a message's keys: the order is the API's).
    assert sorted(bet for bet, _net in outcomes) == sorted(opened["bets"])
    assert ("banker", 0.95) in outcomes and ("player", -1.0) in outcomes
    # Side bets: a pair of fours won the player pair 11 to 1 and either pair 5 to 1.
    assert ("player_pair", 11.0) in outcomes and ("either_pair", 5.0) in outcomes
    assert ("banker_pair", -1.0) in outcomes and ("tie", -1.0) in outcomes
    shown = panel_text(table)
    assert "player_pair +11" in shown and "banker +0.95" in shown and "tie -1" in shown


def test_blackjack_shows_insurance_won_beside_each_box() -> None:
    """Box 1 insures and the dealer has blackjack: the hand loses, the insurance pays 2 to 1
    on half a unit. Box 2 declines: no insurance line for it."""
    table = table_for("blackjack-classic")
    table.open_and_close_betting(boxes=2)
    table.draw("TS", "9H", "KD", "8C", "7C", "AH")  # boxes 18 and 16; hole KD, up AH
    table.decide("insurance", 1, 1, "Y")
    table.decide("insurance", 2, 1, "N")
    result = settled_result(table)
    assert result["dealer"]["blackjack"] is True
    box1, box2 = result["boxes"]
    assert (box1["insurance_net"], box1["hands"][0]["net"], box1["net"]) == (1.0, -1.0, 0.0)
    assert (box2["insurance"], box2["insurance_net"]) == (False, 0.0)
    # A box's net (the API's) is its hands plus its insurance: shown apart, they add up.
    assert bet_outcomes(result) == [
        ("box1 hands", -1.0),
        ("box1 insurance", 1.0),
        ("box2", -1.0),
    ]
    shown = panel_text(table)
    assert "box1 hands -1" in shown and "box1 insurance +1" in shown and "box2 -1" in shown


def test_blackjack_shows_insurance_lost() -> None:
    table = table_for("blackjack-classic")
    table.open_and_close_betting(boxes=1)
    table.draw("TS", "7D", "9C", "AH")  # box 19 against an ace up, hole 7: no blackjack
    table.decide("insurance", 1, 1, "Y")
    table.decide("play", 1, 1, "S")  # the dealer's soft 18 stands
    result = settled_result(table)
    assert result["boxes"][0]["hands"][0]["result"] == "win"
    assert bet_outcomes(result) == [("box1 hands", 1.0), ("box1 insurance", -0.5)]


def test_boundless_shows_its_side_bets() -> None:
    table = table_for("blackjack-boundless")
    table.open_and_close_betting()
    shoe = [parse_card(c) for c in ("8S", "8D", "8H", "TC", "5C", "9D", "9S", "TD", "TH", "TS")]
    deal_until_settled(table, shoe, decide="N")
    result = settled_result(table)
    assert result["player_cards"] == ["8S", "8H"]
    assert "boxes" not in result
    # 8S 8H: a mixed pair (5 to 1); 8S 8H and the dealer's up 8D: three of a kind (30 to 1).
    assert sorted(bet_outcomes(result)) == [
        ("bust_bonus", -1.0),
        ("lucky_trio", -1.0),
        ("pair", 5.0),
        ("poker_trio", 30.0),
    ]
    assert "poker_trio +30" in panel_text(table)


def test_a_panel_sharing_the_screen_keeps_its_bets_on_one_line() -> None:
    """A table's share of the terminal with room for its rows in full still never spreads
    the bets over several lines (a newly settled round with few events shown)."""
    table = table_for("baccarat")
    table.open_and_close_betting()
    table.draw("4S", "TD", "4H", "9C")
    console = Console(width=58, height=22, record=True, color_system=None)
    # In a layout, as the live view shows it: the panel gets the height it has on screen.
    console.print(Layout(table_panel(watched(table).tables[TABLE], now=table.now)))
    lines = console.export_text().splitlines()
    bets = [row for row, line in enumerate(lines) if re.match(r"│ bets\s", line)]
    assert len(bets) == 1, "\n".join(lines)
    follower = lines[bets[0] + 1]
    assert not re.match(r"│\s{6,}\S", follower), "\n".join(lines)


# -- one fault, one pause ------------------------------------------------------------------------

FAULT_AT = 2  # the round card that meets the fault: the banker's first card of round 1
ROUNDS = 2
# The dealer idle deadline that finds the lost frame. Long enough that a loaded machine's
# slow dealer (the bot's reaction, the pty, the journal) never looks like a lost frame: a
# card whose frame is merely late would be entered by hand and then dealt again.
LOST_FRAME_IDLE_S = 6.0


class OneFaultDealer:
    """The demo's dealer (:class:`DealerSimulator` on the table's shoe) whose
    ``FAULT_AT``-th round card meets ``fault`` in the shoe; every other card is drawn as
    the demo draws it."""

    def __init__(self, shoe: ShoeSimulator, fault: FaultPlan) -> None:
        self.dealer = DealerSimulator(shoe, pace_s=0.05)
        self.shoe = shoe
        self.fault = fault
        self.dealt = 0
        self.faulty: str | None = None  # the card that met the fault

    def deal(self, position: str, face_down: bool = False) -> Any:
        self.dealt += 1
        if self.dealt != FAULT_AT:
            return self.dealer.deal(position, face_down)
        shoe, draw = self.shoe, self.shoe.draw

        def draw_with_the_fault(*args: Any, **kwargs: Any) -> Any:
            # The dealer has just set the shoe's faults for a round card; this card meets
            # ours instead (the dealer puts its own back afterwards).
            shoe.faults = self.fault
            del shoe.draw  # the next card is drawn as usual
            return draw(*args, **kwargs)

        shoe.draw = draw_with_the_fault  # type: ignore[method-assign]
        emitted = self.dealer.deal(position, face_down)
        self.faulty = emitted.card if emitted is not None else None
        return emitted

    def __getattr__(self, name: str) -> Callable[..., Any]:
        return getattr(self.dealer, name)


def _play_with_one_fault(
    tmp_path: Path, broker: tuple[str, int], fault: FaultPlan, dealer_idle_s: float
) -> tuple[list[dict[str, Any]], SimulatedTable, OneFaultDealer]:
    table = SimulatedTable(
        tmp_path / "table", *broker, "baccarat", ROUNDS, dealer_idle_s=dealer_idle_s
    )
    dealer = OneFaultDealer(table.shoe, fault)
    table.bots = TableBots(
        table.platform,
        table.supervisor,
        rounds=ROUNDS,
        dealer=dealer,  # type: ignore[arg-type]
        resolve_delay_s=0.1,
    )
    try:
        table.daemon.start()
        table.bots.start()
        wait_until(
            lambda: table.bots.done or not table.daemon.alive(), 90, f"{ROUNDS} rounds played"
        )
        assert table.daemon.alive(), table.daemon.log()[-3000:]
        wait_until(
            lambda: (
                len([e for e in unique_by_seq(table.viewer.events) if e["type"] == "round_settled"])
                == ROUNDS
            ),
            30,
            "the viewer seeing every round settled",
        )
        table.bots.stop()
        seen = unique_by_seq(table.viewer.events)
        assert not table.bots.errors, (table.bots.errors[:5], _pauses(seen))
        return unique_by_seq(table.viewer.events), table, dealer
    finally:
        table.close()


def _pauses(events: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["reason"] for e in events if e["type"] == "table_paused"]


def _entered_by_hand(events: list[dict[str, Any]]) -> list[str]:
    return [
        e["data"]["card"]
        for e in events
        if e["type"] == "card_dealt" and e["data"]["source"] == "supervisor"
    ]


def _shown_pauses(table: SimulatedTable) -> int:
    watch = DemoWatch(tables=[TABLE])
    for topic, payload in table.raw:
        watch.handle(topic, payload)
    return watch.tables[TABLE].pauses


def test_one_misread_pauses_the_table_once(tmp_path: Path, mqtt_broker: tuple[str, int]) -> None:
    """The shoe cannot read one card: one pause, the supervisor enters the card the dealer
    laid on the felt, and the dealer draws nothing while the table waits for it (a card
    drawn then would pause the table again, out of turn)."""
    events, table, dealer = _play_with_one_fault(
        tmp_path, mqtt_broker, FaultPlan(unreadable_rate=1.0), dealer_idle_s=30.0
    )
    assert _pauses(events) == ["misread"]
    assert _shown_pauses(table) == 1
    assert _entered_by_hand(events) == [dealer.faulty]
    assert check_stream(events, "baccarat") == ROUNDS


def test_one_lost_frame_pauses_the_table_once(tmp_path: Path, mqtt_broker: tuple[str, int]) -> None:
    """The shoe never sends one card's frame: the dealer idle deadline pauses the table, the
    supervisor enters the card lying on the felt, and when the shoe's next card shows the
    gap in its numbering, the table knows that card was entered and deals on."""
    events, table, dealer = _play_with_one_fault(
        tmp_path, mqtt_broker, FaultPlan(drop_rate=1.0), dealer_idle_s=LOST_FRAME_IDLE_S
    )
    assert _pauses(events) == ["dealer_idle"]
    assert _shown_pauses(table) == 1
    assert _entered_by_hand(events) == [dealer.faulty]
    assert [e["data"] for e in events if e["type"] == "cards_lost"] == [{"count": 1}]
    assert not [e for e in events if e["type"] == "cards_burned"]
    assert check_stream(events, "baccarat") == ROUNDS


def test_the_one_fault_dealer_meets_its_fault_on_one_card_only(tmp_path: Path) -> None:
    with ShoeSimulator("angel-eye", tmp_path / "shoe", seed=11) as shoe:
        dealer = OneFaultDealer(shoe, FaultPlan(unreadable_rate=1.0))
        emitted = [dealer.deal(position) for position in ("player", "banker", "player")]
        assert [e.event for e in emitted] == ["card", "misread", "card"]
        assert dealer.faulty == emitted[1].card
        assert shoe.faults == FaultPlan()


# -- what each event says, and the demo's last word -----------------------------------------


def _event(seq: int, kind: str, **data: Any) -> dict[str, Any]:
    return {"api": 1, "seq": seq, "table": TABLE, "type": kind, "at": 1000.0 + seq, "data": data}


def test_the_plain_lines_say_what_burns_and_unread_cards_mean() -> None:
    assert describe_event(_event(1, "burn_started", shoe_id=1, cards=10)) == (
        "shoe 1: burning 10 cards"
    )
    assert describe_event(_event(2, "burn_completed", shoe_id=1, cards=11)) == (
        "shoe 1: burn done: 11 cards discarded, the revealed one included"
    )
    unread = describe_event(
        _event(3, "card_dealt", round_id=1, position="dealer", face_down=True, source="unread")
    )
    assert unread == "dealer: a card face down (misread by the shoe: read when it is turned over)"
    hidden = describe_event(
        _event(4, "card_dealt", round_id=1, position="dealer", face_down=True, source="shoe")
    )
    assert hidden == "dealer: a card face down"
    read = describe_event(
        _event(5, "hole_card_read", round_id=1, position="dealer", source="camera", card="7H")
    )
    assert read == "the misread card at dealer was read by the camera: 7H"
    not_yet = describe_event(
        _event(6, "hole_card_read", round_id=1, position="dealer", source="supervisor")
    )
    assert not_yet.startswith("the misread card at dealer was read by a supervisor (")
    assert "{" not in read + not_yet  # words, not the event's JSON


def test_betting_closed_is_among_the_last_events() -> None:
    watch = DemoWatch(tables=[TABLE])
    watch.take(TABLE, "event", _event(1, "betting_closed", round_id=4))
    assert list(watch.tables[TABLE].events) == [
        "#1 betting_closed: round 4: bets closed, dealing starts"
    ]


def test_the_summary_counts_a_pause_resolved_by_its_table_resumed_event() -> None:
    """Two pauses, one resumed, and the table stopped while paused: one resolved."""
    watch = DemoWatch(tables=[TABLE])
    paused = {"reason": "misread", "message": "a card could not be read"}
    resumed = {"reason": "misread", "by": "demo-supervisor", "resolution": "enter_card"}
    for seq, (kind, data) in enumerate(
        [("table_paused", paused), ("table_resumed", resumed), ("table_paused", paused)], 1
    ):
        watch.take(TABLE, "event", _event(seq, kind, **data))
    line = summary_line(watch.tables[TABLE], cards_drawn=7, camera=False)
    assert "1 pause(s) resolved (1 left unresolved)" in line, line
    assert line.startswith(f"table {TABLE}: 0 round(s) settled, 0 voided, ")
    assert line.endswith("7 card(s) drawn, 3 event(s) published")


# -- the live view on a 120x40 terminal with three tables ---------------------------------------

SCREEN_COLUMNS, SCREEN_LINES = 120, 40
REPO_ROOT = Path(__file__).resolve().parents[2]


def _screen_text(screen: Any) -> list[str]:
    """Every line the terminal showed since the last frame began: scrolled off, then shown."""
    scrolled = ["".join(row[x].data for x in range(screen.columns)) for row in screen.history.top]
    return [line.rstrip() for line in scrolled + list(screen.display)]


def _panels(lines: list[str]) -> dict[str, list[str]]:
    """The last frame's panels: table id -> the lines inside its border."""
    panels: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        title = re.match(r"╭─+ table (\S+) ·", line)
        if title:
            current = panels[title.group(1)] = []
        elif line.startswith("╰"):
            current = None
        elif current is not None:
            current.append(line.strip("│ ").rstrip("│").rstrip())
    return panels


def test_the_live_view_fits_three_tables_on_a_120x40_terminal(tmp_path: Path) -> None:
    """Every table's panel ends with its newest event (the round just settled, in the final
    frame), and no bet's value is wrapped away from its name."""
    pyte = pytest.importorskip("pyte")
    screen = pyte.HistoryScreen(SCREEN_COLUMNS, SCREEN_LINES, history=5000)
    stream = pyte.ByteStream(screen)
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SCREEN_LINES, SCREEN_COLUMNS, 0, 0))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.tools.cli",
            "demo",
            "--tables",
            "3",
            "--rounds",
            "3",
            "--misread-rate",
            "0.2",
            "--resolve-delay-s",
            "0.2",
            "--pace-s",
            "0.02",
            "--betting-s",
            "0.3",
            "--decision-s",
            "60",
            "--dealer-idle-s",
            "60",
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=REPO_ROOT,
        env={
            **os.environ,
            "TERM": "xterm-256color",
            "COLUMNS": "",
            "LINES": "",
            "TMPDIR": str(temporary),
        },
        start_new_session=True,
    )
    os.close(slave)
    lock = threading.Lock()
    frames: list[list[str]] = []

    def pump() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            with lock:
                stream.feed(data)
                frames.append([line.rstrip() for line in screen.display])

    reader = threading.Thread(target=pump, name="pty-reader", daemon=True)
    reader.start()
    try:
        status = process.wait(180)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            process.wait(30)
        reader.join(5)
        os.close(master)
    lines = _screen_text(screen)
    text = "\n".join(lines)
    assert status == 0, text[-3000:]
    summaries = dict(
        re.findall(r"livetable demo: table (\S+): .*?(\d+) event\(s\) published", text)
    )
    assert sorted(summaries) == ["demo1", "demo2", "demo3"], text[-3000:]
    last_frame = lines[: max(i for i, line in enumerate(lines) if "livetable demo: table" in line)]
    panels = _panels(last_frame)
    assert sorted(panels) == ["demo1", "demo2", "demo3"], "\n".join(last_frame)
    for table_id, inside in panels.items():
        events = [line for line in inside if re.match(r"#\d+ ", line)]
        assert len(events) >= 2, (table_id, inside)
        # The newest last, none missing between those shown.
        seqs = [int(line[1:].split(" ", 1)[0]) for line in events]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), (table_id, events)
        # The table closes between rounds when the demo stops: its last round settled, then
        # it said so, in words.
        assert inside[-1] == events[-1], (table_id, inside)
        assert " round_settled: " in events[-2], (table_id, events)
        assert events[-1].endswith("rounds_held: no new round: the table is closing"), events
        assert seqs[-1] == int(summaries[table_id]), (table_id, events, summaries)
    # In every frame drawn, each bets row is one line: a value never wraps from its name.
    for frame in frames:
        for row, line in enumerate(frame[:-1]):
            if re.match(r"│ bets\s", line):
                follower = frame[row + 1]
                assert not re.match(r"│\s{6,}\S", follower), "\n".join(frame)
    assert not list(temporary.glob("livetable-demo-*"))
