"""What ``livetable demo`` shows: the tables as an MQTT subscriber sees them.

:class:`DemoWatch` is fed every message the demo's subscriber receives (``livetable/#``)
and keeps, per table, what a console needs: availability, the latest retained state, the
last events, the last result and the last pause with how it was resolved. It knows nothing
of the daemon but the API (``docs/mqtt-api.md``). From it, :func:`render` draws the live
terminal view (rich) and :func:`describe_event` the one line per event printed when stdout
is not a terminal.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

# Events a person watching does not need a line for.
QUIET_EVENTS = frozenset({"betting_closed"})
LAST_EVENTS = 12


def _cards(cards: list[Any] | None) -> str:
    return " ".join("??" if card is None else str(card) for card in cards or []) or "-"


def _net(value: Any) -> str:
    return f"{value:+g}" if isinstance(value, int | float) else str(value)


def settled_summary(data: dict[str, Any]) -> str:
    """One line a person can read: the hands, the totals and the main result."""
    result = data.get("result", {})
    round_id = data.get("round_id")
    if "winner" in result:
        return (
            f"round {round_id}: player {_cards(result['player'])} ({result['player_total']}) "
            f"vs banker {_cards(result['banker'])} ({result['banker_total']}): "
            f"{result['winner']}"
        )
    dealer = result.get("dealer", {})
    parts = [f"round {round_id}: dealer {_cards(dealer.get('cards'))}"]
    if "total" in dealer:
        parts[0] += f" ({dealer['total']})"
    if "player_cards" in result:
        parts.append(f"players' cards {_cards(result['player_cards'])}")
    for box in result.get("boxes", []):
        hands = "; ".join(
            f"{_cards(hand['cards'])} ({hand.get('total')}) {hand.get('result', '')}"
            for hand in box.get("hands", [])
        )
        parts.append(f"box {box.get('box')}: {hands}")
    return " | ".join(parts)


def bet_outcomes(result: dict[str, Any]) -> list[tuple[str, float]]:
    """Every bet of a result with its net per unit staked (a box with insurance as its hands
    and its insurance, which add up to the box's net the API gives)."""
    if isinstance(result.get("bets"), dict):
        return [(bet, float(net)) for bet, net in result["bets"].items()]
    outcomes: list[tuple[str, float]] = []
    for box in result.get("boxes", []):
        # A box's net is its hands plus its insurance: shown apart, the two add up to it.
        net = float(box.get("net", 0.0))
        insurance = float(box.get("insurance_net") or 0.0)
        if insurance:
            outcomes.append((f"box{box.get('box')} hands", net - insurance))
            outcomes.append((f"box{box.get('box')} insurance", insurance))
        else:
            outcomes.append((f"box{box.get('box')}", net))
    for bet, net in (result.get("side_bets") or {}).items():
        outcomes.append((bet, float(net)))
    return outcomes


def describe_event(event: dict[str, Any]) -> str:
    """One line for an event (``type`` and ``data`` as published)."""
    kind, data = event.get("type", "?"), event.get("data") or {}
    if kind == "card_dealt":
        face = "face down" if data.get("face_down") else data.get("card", "?")
        source = data.get("source", "shoe")
        return f"{data.get('position')} {face}" + ("" if source == "shoe" else f" (by {source})")
    if kind == "round_opened":
        return (
            f"round {data.get('round_id')} (no. {data.get('round_number')} of shoe "
            f"{data.get('shoe_id')}): bets open"
        )
    if kind == "decision_requested":
        return (
            f"{data.get('kind')} for box {data.get('box')} hand {data.get('hand')}: "
            f"{'/'.join(data.get('options', []))}, default {data.get('default')}"
        )
    if kind == "decision_taken":
        auto = " (at the deadline)" if data.get("auto") else ""
        return f"box {data.get('box')} hand {data.get('hand')}: {data.get('decision')}{auto}"
    if kind == "round_settled":
        return settled_summary(data)
    if kind == "table_paused":
        return f"{data.get('reason')}: {data.get('message')}"
    if kind == "table_resumed":
        how = data.get("resolution") or "resume"
        return f"{data.get('reason')} resolved by {data.get('by')}: {how}"
    if kind == "round_voided":
        return f"round {data.get('round_id')} voided by {data.get('by')}: {data.get('reason')}"
    text = json.dumps(data, separators=(", ", ": "), sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


@dataclass
class Pause:
    reason: str
    message: str
    since: float | None
    needs: list[str] = field(default_factory=list)
    resolved: str | None = None


@dataclass
class TableWatch:
    """One table as its MQTT messages show it."""

    table_id: str
    availability: str | None = None
    state: dict[str, Any] | None = None
    last_seq: int = 0
    events: deque[str] = field(default_factory=lambda: deque(maxlen=LAST_EVENTS))
    result: dict[str, Any] | None = None
    pause: Pause | None = None
    pauses: int = 0
    rounds_settled: int = 0
    rounds_voided: int = 0
    camera_reads: int = 0
    messages: int = 0

    def on_event(self, event: dict[str, Any]) -> str | None:
        """Apply an event once (QoS 1 may repeat it); its line, or None for a repeat."""
        seq = int(event.get("seq", 0))
        if seq <= self.last_seq:
            return None
        self.last_seq = seq
        kind, data = event.get("type"), event.get("data") or {}
        if kind == "round_settled":
            self.result = data
            self.rounds_settled += 1
        elif kind == "round_voided":
            self.result = data
            self.rounds_voided += 1
        elif kind == "table_paused":
            self.pauses += 1
            self.pause = Pause(str(data.get("reason")), str(data.get("message")), event.get("at"))
        elif kind == "table_resumed" and self.pause is not None:
            took = ""
            if self.pause.since is not None and event.get("at") is not None:
                took = f" after {float(event['at']) - float(self.pause.since):.1f} s"
            how = data.get("resolution") or "resume"
            self.pause.resolved = f"resolved by {data.get('by')}: {how}{took}"
        elif kind == "card_dealt" and data.get("source") == "camera":
            self.camera_reads += 1
        line = describe_event(event)
        if kind not in QUIET_EVENTS:
            self.events.append(f"#{seq} {kind}: {line}")
        return line

    def on_state(self, state: dict[str, Any]) -> None:
        if self.state is None or state.get("seq", 0) >= self.state.get("seq", 0):
            self.state = state
            pause = state.get("pause")
            if pause and (self.pause is None or self.pause.resolved is not None):
                # A pause seen in the state before (or without) its event: a late subscriber.
                self.pause = Pause(
                    str(pause.get("reason")), str(pause.get("message")), pause.get("since")
                )
            if pause and self.pause is not None:
                self.pause.needs = list(pause.get("needs") or [])


class DemoWatch:
    """Every table under a topic prefix, fed by one subscriber (thread-safe)."""

    def __init__(self, prefix: str = "livetable", tables: list[str] | None = None) -> None:
        self.prefix = prefix
        self.lock = threading.Lock()
        self.tables: dict[str, TableWatch] = {t: TableWatch(t) for t in tables or []}

    def handle(self, topic: str, payload: bytes) -> tuple[str, str | None]:
        """Take one message; (table id, the event's line or None)."""
        levels = topic.split("/")
        if len(levels) < 3 or levels[0] != self.prefix:
            return "", None
        table_id, kind = levels[1], levels[2]
        with self.lock:
            table = self.tables.setdefault(table_id, TableWatch(table_id))
            table.messages += 1
            if kind == "availability":
                table.availability = payload.decode("utf-8", "replace")
                return table_id, None
            if kind not in ("state", "events"):
                return table_id, None
            try:
                body = json.loads(payload)
            except ValueError:
                return table_id, None
            if kind == "state":
                table.on_state(body)
                return table_id, None
            return table_id, table.on_event(body)


# -- the live view (rich) ---------------------------------------------------------------------


def _awaiting(state: dict[str, Any], now: float) -> str:
    awaiting = state.get("awaiting") or {}
    what = awaiting.get("what")
    deadline = (state.get("round") or {}).get("deadline")
    left = f" ({max(0.0, deadline - now):.1f} s left)" if isinstance(deadline, int | float) else ""
    if what == "card":
        how = "face down" if awaiting.get("face_down") else "face up"
        return f"the dealer: a card for {awaiting.get('position')}, {how}"
    if what == "decision":
        return (
            f"the platform: {awaiting.get('kind')} for box {awaiting.get('box')} hand "
            f"{awaiting.get('hand')} [{' '.join(awaiting.get('options', []))}], default "
            f"{awaiting.get('default')}{left}"
        )
    if what == "bets":
        return f"bets{left}"
    if what == "burn":
        return f"the dealer: burn {awaiting.get('cards')} more card(s)"
    if what == "camera":
        return f"the camera: reading the card at {awaiting.get('position')}"
    if what == "reveal":
        return "the dealer: draw the shoe's first card and show it"
    if what == "supervisor":
        return "a supervisor"
    if what == "new_shoe":
        return "a new shoe (shuffle, then a supervisor declares it)"
    if what == "round_request":
        return "the platform to open a round"
    return "-" if what is None else str(what)


def _hands(view: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, cards and total) for every hand of a round's public view."""
    rows: list[tuple[str, str]] = []
    if "player_total" in view:  # baccarat
        rows.append(("player", f"{_cards(view.get('player'))}  ({view.get('player_total')})"))
        rows.append(("banker", f"{_cards(view.get('banker'))}  ({view.get('banker_total')})"))
        return rows
    dealer = view.get("dealer") or {}
    total = dealer.get("total")
    rows.append(("dealer", f"{_cards(dealer.get('cards'))}  ({'?' if total is None else total})"))
    player = view.get("player")
    if isinstance(player, dict):  # Boundless: one common sequence
        rows.append(
            (
                "players",
                f"{_cards(player.get('cards'))}  ({player.get('initial_total')}, sequence "
                f"{player.get('sequence_total')})",
            )
        )
    for box in view.get("boxes", []):
        for index, hand in enumerate(box.get("hands", []), start=1):
            label = f"box{box.get('box')}" + (f".hand{index}" if len(box["hands"]) > 1 else "")
            doubled = " doubled" if hand.get("doubled") else ""
            rows.append(
                (
                    label,
                    f"{_cards(hand.get('cards'))}  ({hand.get('total')}) {hand.get('state')}"
                    f"{doubled}",
                )
            )
    return rows


def _shoe(state: dict[str, Any]) -> str:
    shoe = state.get("shoe") or {}
    if shoe.get("id") is None:
        return "no shoe"
    cut = "out" if shoe.get("cut_card_seen") else "in"
    final = shoe.get("final_round")
    return (
        f"shoe {shoe['id']}: {shoe.get('cards_drawn')} drawn, {shoe.get('cards_left')} left, "
        f"round {shoe.get('round_number')}, cut card {cut}"
        + (f" (final round {final})" if final is not None else "")
    )


def table_panel(table: TableWatch, now: float, events_shown: int = LAST_EVENTS) -> Any:
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    state = table.state or {}
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    phase = str(state.get("phase", "-"))
    phase_style = "bold white on red" if phase == "PAUSED" else "bold cyan"
    grid.add_row("phase", Text(phase, style=phase_style))
    grid.add_row("shoe", _shoe(state) if state else "-")
    live_round = state.get("round") or {}
    view = live_round.get("view")
    if live_round:
        grid.add_row("round", f"{live_round.get('id')}")
    if isinstance(view, dict):
        for label, cards in _hands(view):
            grid.add_row(label, cards)
    grid.add_row("awaiting", _awaiting(state, now) if state else "-")
    if table.result is not None:
        if "result" in table.result:
            grid.add_row("result", settled_summary(table.result))
            outcomes = Text()
            for bet, net in bet_outcomes(table.result["result"]):
                style = "green" if net > 0 else ("yellow" if net == 0 else "dim")
                outcomes.append(f"{bet} {_net(net)}  ", style=style)
            grid.add_row("bets", outcomes)
        else:
            grid.add_row("result", describe_event({"type": "round_voided", "data": table.result}))
    pause = table.pause
    if pause is not None:
        text = Text(f"{pause.reason}: {pause.message}", style="bold red")
        if pause.resolved is None:
            if pause.since is not None:
                text.append(f"\nfor {max(0.0, now - float(pause.since)):.1f} s", style="red")
            for need in pause.needs:
                text.append(f"\nneeds {need}", style="red")
            grid.add_row(Text("PAUSED", style="bold red"), text)
        else:
            text.stylize("red")
            text.append(f"\n{pause.resolved}", style="green")
            grid.add_row("last pause", text)
    events = Text("\n".join(list(table.events)[-events_shown:]), style="dim")
    availability = table.availability or "?"
    title = f"table {table.table_id} · {state.get('game', '?')} · {availability}"
    subtitle = (
        f"{table.rounds_settled} settled, {table.rounds_voided} voided, {table.pauses} pause(s)"
    )
    border = "red" if phase == "PAUSED" else ("green" if availability == "online" else "yellow")
    return Panel(
        Group(grid, Text("last events", style="bold"), events),
        title=title,
        subtitle=subtitle,
        border_style=border,
    )


def render(watch: DemoWatch, header: str, now: float | None = None) -> Any:
    """The whole screen: a header line, then every table, one above another."""
    from rich.layout import Layout
    from rich.text import Text

    now = time.time() if now is None else now
    with watch.lock:
        shown = LAST_EVENTS if len(watch.tables) < 2 else max(2, 8 // len(watch.tables))
        panels = [table_panel(table, now, shown) for table in watch.tables.values()]
    layout = Layout()
    layout.split_column(
        Layout(Text(header, style="bold"), size=2, name="header"),
        *[Layout(panel, name=f"table{index}") for index, panel in enumerate(panels)],
    )
    return layout
