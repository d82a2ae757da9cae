"""What ``livetable demo`` shows: the tables as an MQTT subscriber sees them.

:class:`DemoWatch` is fed every message the demo's subscriber receives (``livetable/#``)
and keeps, per table, what a console needs: availability, the latest retained state, the
last events, the last result and the last pause with how it was resolved. It knows nothing
of the daemon but the API (``docs/mqtt-api.md``). From it, :func:`render` draws the live
terminal view (rich) and :func:`~controller.tools.event_text.describe_event` the one line per
event printed when stdout is not a terminal.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from controller.kernel.presentation import SIDES, presentation
from controller.tools.event_text import cards_text as _cards
from controller.tools.event_text import describe_event, settled_summary

LAST_EVENTS = 12


def _net(value: Any) -> str:
    return f"{value:+g}" if isinstance(value, int | float) else str(value)


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
    resumes: int = 0
    rounds_settled: int = 0
    rounds_voided: int = 0
    camera_reads: int = 0
    messages: int = 0
    for_a_person: str | None = None
    """With the supervisor standing aside: what the person resolving the pause needs."""

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
        elif kind == "table_resumed":
            self.resumes += 1
            self.for_a_person = None
        if kind == "table_resumed" and self.pause is not None:
            took = ""
            if self.pause.since is not None and event.get("at") is not None:
                took = f" after {float(event['at']) - float(self.pause.since):.1f} s"
            how = data.get("resolution") or "resume"
            self.pause.resolved = f"resolved by {data.get('by')}: {how}{took}"
        elif kind == "card_dealt" and data.get("source") == "camera":
            self.camera_reads += 1
        line = describe_event(event, (self.state or {}).get("game"))
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
        """Take one raw MQTT message; (table id, the event's line or None)."""
        levels = topic.split("/")
        if len(levels) < 3 or levels[0] != self.prefix:
            return "", None
        table_id, channel = levels[1], levels[2]
        if channel == "availability":
            return table_id, self.take(table_id, "availability", payload.decode("utf-8", "replace"))
        try:
            body = json.loads(payload)
        except ValueError:
            return table_id, None
        kind = {"events": "event"}.get(channel, channel)
        return table_id, self.take(table_id, kind, body)

    def note(self, table_id: str, text: str) -> None:
        """What the demo's supervisor, standing aside, says a person needs for the pause."""
        with self.lock:
            self.tables.setdefault(table_id, TableWatch(table_id)).for_a_person = text

    def update(self, update: Any) -> str | None:
        """Take one :class:`~controller.client.api_client.TableUpdate` (the demo's API client
        gives every one); the event's line, or None."""
        return self.take(update.table_id, update.kind, update.body)

    def take(self, table_id: str, kind: str, body: Any) -> str | None:
        """``kind``: availability, state, event (others are counted only)."""
        with self.lock:
            table = self.tables.setdefault(table_id, TableWatch(table_id))
            table.messages += 1
            if kind == "availability":
                table.availability = str(body)
            elif kind == "state" and isinstance(body, dict):
                table.on_state(body)
            elif kind == "event" and isinstance(body, dict):
                return table.on_event(body)
        return None


def summary_line(table: TableWatch, cards_drawn: int, camera: bool) -> str:
    """The demo's last word on a table. A pause is counted resolved by its ``table_resumed``
    event (a table stopped while paused has one pause more than resumes)."""
    extra = f", the camera read {table.camera_reads} card(s)" if camera else ""
    unresolved = table.pauses - table.resumes
    still = f" ({unresolved} left unresolved)" if unresolved > 0 else ""
    return (
        f"table {table.table_id}: {table.rounds_settled} round(s) settled, "
        f"{table.rounds_voided} voided, {table.resumes} pause(s) resolved{still}, "
        f"{cards_drawn} card(s) drawn, {table.last_seq} event(s) published{extra}"
    )


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
    """(label, cards and total) for every hand of a round's public view, as its game's
    presentation says (``controller/kernel/presentation.py``)."""
    rows: list[tuple[str, str]] = []
    shown = presentation(view.get("game"))
    if shown is None:
        return rows
    if shown.shape == SIDES:
        for hand in shown.hands:
            total = view.get(shown.total_key(hand))
            rows.append((hand, f"{_cards(view.get(hand))}  ({'?' if total is None else total})"))
        return rows
    dealer = view.get("dealer") or {}
    total = dealer.get("total")
    rows.append(("dealer", f"{_cards(dealer.get('cards'))}  ({'?' if total is None else total})"))
    player = view.get("player")
    if "player" in shown.hands and isinstance(player, dict):  # Boundless: the common sequence
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


def _bet_items(result: dict[str, Any]) -> list[Any]:
    """Each bet and its net as one piece of text that never breaks between the two."""
    from rich.text import Text

    items = []
    for bet, net in bet_outcomes(result):
        style = "green" if net > 0 else ("yellow" if net == 0 else "dim")
        items.append(Text(f"{bet} {_net(net)}", style=style, no_wrap=True))
    return items


def _fits(items: list[Any], width: int | None) -> bool:
    """Whether ``items`` (texts, two spaces apart) fit on one line of ``width`` (None: any
    number of lines will do)."""
    if width is None:
        return True
    return sum(len(item.plain) for item in items) + 2 * max(0, len(items) - 1) <= width


def _bets_in_brief(result: dict[str, Any]) -> Any:
    """One line: the bets that won or pushed, and how many lost (several tables on one
    screen leave a line for the bets)."""
    from rich.text import Text

    outcomes = bet_outcomes(result)
    text = Text(no_wrap=True, overflow="ellipsis")
    kept = [(bet, net) for bet, net in outcomes if net >= 0]
    for bet, net in kept:
        text.append(f"{bet} {_net(net)}", style="green" if net > 0 else "yellow")
        text.append("  ")
    lost = len(outcomes) - len(kept)
    if lost:
        text.append(f"{lost} {'other bets' if kept else 'bets'} lost", style="dim")
    return text


def _phase_text(state: dict[str, Any]) -> Any:
    from rich.text import Text

    phase = str(state.get("phase", "-"))
    return Text(phase, style="bold white on red" if phase == "PAUSED" else "bold cyan")


def _pause_rows(pause: Pause, now: float, brief: bool) -> list[tuple[Any, Any]]:
    from rich.text import Text

    text = Text(f"{pause.reason}: {pause.message}", style="bold red")
    if pause.resolved is None:
        if pause.since is not None:
            for_s = f"for {max(0.0, now - float(pause.since)):.1f} s"
            text.append(f" ({for_s})" if brief else f"\n{for_s}", style="red")
        if brief and pause.needs:
            text.append("\nneeds " + "; ".join(pause.needs), style="red")
        for need in [] if brief else pause.needs:
            text.append(f"\nneeds {need}", style="red")
        return [(Text("PAUSED", style="bold red"), text)]
    text.stylize("red")
    text.append((" · " if brief else "\n") + pause.resolved, style="green")
    if brief:
        text.no_wrap, text.overflow = True, "ellipsis"
    return [("last pause", text)]


def _rows(
    table: TableWatch, now: float, brief: bool, bets_width: int | None = None
) -> list[tuple[Any, Any]]:
    """The panel's rows (label, content); ``brief``: as few lines as will say it.
    ``bets_width``: the panel's inner width on a screen shared with other tables, where
    bets that do not fit on one line beside the labels are said in brief."""
    from rich.columns import Columns
    from rich.text import Text

    state = table.state or {}
    live_round = state.get("round") or {}
    view = live_round.get("view")
    rows: list[tuple[Any, Any]] = []
    if brief:
        phase = _phase_text(state)
        if live_round:
            phase.append(f" · round {live_round.get('id')}", style="bold")
        phase.append(f" · {_shoe(state) if state else '-'}")
        rows.append(("phase", phase))
        if isinstance(view, dict):
            # Each hand one piece that never breaks: as many on a line as fit.
            hands = [Text(f"{label} {cards}", no_wrap=True) for label, cards in _hands(view)]
            rows.append(("hands", Columns(hands, padding=(0, 3))))
    else:
        rows.append(("phase", _phase_text(state)))
        rows.append(("shoe", _shoe(state) if state else "-"))
        if live_round:
            rows.append(("round", f"{live_round.get('id')}"))
        if isinstance(view, dict):
            rows.extend(_hands(view))
    rows.append(("awaiting", _awaiting(state, now) if state else "-"))
    if table.result is not None:
        if "result" in table.result:
            summary = settled_summary(table.result, state.get("game"))
            rows.append(
                ("result", Text(summary, no_wrap=True, overflow="ellipsis") if brief else summary)
            )
            bets = table.result["result"]
            rows.append(
                (
                    "bets",
                    _bets_in_brief(bets) if brief else Columns(_bet_items(bets), padding=(0, 2)),
                )
            )
        else:
            rows.append(("result", describe_event({"type": "round_voided", "data": table.result})))
    if table.pause is not None:
        rows.extend(_pause_rows(table.pause, now, brief))
        if table.pause.resolved is None and table.for_a_person:
            rows.append(("console", Text(table.for_a_person, style="bold yellow")))
    if bets_width is not None and table.result is not None and "result" in table.result:
        # The bets on one line beside the widest label and its two spaces, or in brief.
        room = bets_width - max(len(str(label)) for label, _content in rows) - 2
        items = _bet_items(table.result["result"])
        if not brief and not _fits(items, room):
            rows = [
                (label, _bets_in_brief(table.result["result"]) if label == "bets" else content)
                for label, content in rows
            ]
    return rows


class TablePanel:
    """One table's panel, fitted to the height it is given (the live view gives each table
    its share of the terminal): the rows in full, or in brief when they would leave no room
    for the last events, then as many of the last events as fit, the newest last."""

    def __init__(self, table: TableWatch, now: float, events_max: int = LAST_EVENTS) -> None:
        self.table = table
        self.now = now
        self.events_max = events_max

    def _grid(self, brief: bool, bets_width: int | None = None) -> Any:
        from rich.table import Table

        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for label, content in _rows(self.table, self.now, brief, bets_width):
            grid.add_row(label, content)
        return grid

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.console import Group
        from rich.panel import Panel
        from rich.text import Text

        table, state = self.table, self.table.state or {}
        height = options.height
        inner = options.update(width=max(1, options.max_width - 4), height=None)
        # Sharing the screen (a height given), the bets keep to one line.
        bets_width = None if height is None else inner.max_width
        grid = self._grid(brief=False, bets_width=bets_width)
        events_max = min(self.events_max, len(table.events))
        if height is not None:
            # Inside the border: the rows, "last events", and at least two of them.
            room = height - 2
            used = len(console.render_lines(grid, inner, pad=False))
            if used + 1 + min(2, events_max) > room:
                grid = self._grid(brief=True)
                used = len(console.render_lines(grid, inner, pad=False))
            events_max = max(0, min(events_max, room - used - 1))
        parts: list[Any] = [grid]
        if events_max:
            shown = list(table.events)[-events_max:]
            parts.append(Text("last events", style="bold"))
            parts.append(Text("\n".join(shown), style="dim", no_wrap=True, overflow="ellipsis"))
        phase = str(state.get("phase", "-"))
        availability = table.availability or "?"
        border = "red" if phase == "PAUSED" else ("green" if availability == "online" else "yellow")
        yield Panel(
            Group(*parts),
            title=f"table {table.table_id} · {state.get('game', '?')} · {availability}",
            subtitle=(
                f"{table.rounds_settled} settled, {table.rounds_voided} voided, "
                f"{table.pauses} pause(s)"
            ),
            border_style=border,
            height=height,
        )


def table_panel(table: TableWatch, now: float, events_shown: int = LAST_EVENTS) -> Any:
    return TablePanel(table, now, events_shown)


def render(watch: DemoWatch, header: str, now: float | None = None) -> Any:
    """The whole screen: a header line, then every table, one above another, each in its
    share of the height."""
    from rich.layout import Layout
    from rich.text import Text

    now = time.time() if now is None else now
    with watch.lock:
        panels = [TablePanel(_copy(table), now) for table in watch.tables.values()]
    layout = Layout()
    layout.split_column(
        Layout(Text(header, style="bold"), size=2, name="header"),
        *[Layout(panel, name=f"table{index}") for index, panel in enumerate(panels)],
    )
    return layout


def _copy(table: TableWatch) -> TableWatch:
    """What a frame draws, taken under the watch's lock (the panel is drawn after it)."""
    from copy import copy

    taken = copy(table)
    taken.events = deque(table.events, maxlen=LAST_EVENTS)
    taken.pause = copy(table.pause)
    return taken
