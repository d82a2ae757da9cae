"""What ``livetable ctl`` prints: a table's state and events for a person (or as JSON lines
with ``--json``), the audit as aligned columns or as CSV (every cell a spreadsheet would run as
a formula defused), and one round's events picked from a table's series.

The actions themselves, and how they reach the table, are :mod:`controller.tools.ctl`.
"""

from __future__ import annotations

import argparse
import csv
import json
from datetime import UTC, datetime
from typing import Any

from controller.kernel.cli_support import defuse_formula, print_json


def _when(at: Any) -> str:
    if not isinstance(at, int | float):
        return ""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _outcome(entry: dict[str, Any]) -> str:
    if entry.get("ok") is None:
        return "no answer recorded"
    if entry["ok"]:
        return f"ok: {entry.get('message')}"
    return f"REFUSED ({entry.get('code')}): {entry.get('message')}"


def _printable(text: str) -> str:
    """``text`` with its control characters escaped: a reason typed by someone must not
    move the cursor or recolour the terminal of whoever reads the audit."""
    return "".join(char if char.isprintable() else json.dumps(char)[1:-1] for char in str(text))


def audit_lines(entries: list[dict[str, Any]]) -> list[str]:
    """The audit as aligned columns, for a person: row, time (UTC), account, role,
    command, its arguments and the outcome."""
    rows = [
        [
            f"#{entry['journal_seq']}",
            _when(entry.get("at")),
            entry.get("account") or "",
            entry.get("role") or "-",
            entry.get("command") or "",
            " ".join(f"{key}={value}" for key, value in sorted(entry["args"].items())),
            _outcome(entry),
        ]
        for entry in entries
    ]
    rows = [[_printable(cell) for cell in row] for row in rows]
    widths = [max((len(row[column]) for row in rows), default=0) for column in range(6)]
    return ["  ".join([*(row[i].ljust(widths[i]) for i in range(6)), row[6]]) for row in rows]


# The CSV's columns: each argument the journal keeps has its own (so a spreadsheet can sort
# and filter by it); any other goes to other_args as JSON.
AUDIT_CSV_ARGS = ("reason", "resolution", "card", "boxes")
AUDIT_CSV_HEADER = (
    "journal_seq",
    "at_utc",
    "account",
    "role",
    "command",
    "transaction",
    *AUDIT_CSV_ARGS,
    "other_args",
    "ok",
    "code",
    "message",
)


def defused(cell: Any) -> str:
    """A CSV cell a spreadsheet never runs
    (:func:`~controller.kernel.cli_support.defuse_formula`)."""
    return defuse_formula("" if cell is None else str(cell))


def write_audit_csv(entries: list[dict[str, Any]], out: Any) -> None:
    """The audit as CSV on ``out``: the header row, then one row per command."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(AUDIT_CSV_HEADER)
    for entry in entries:
        args = entry.get("args") or {}
        other = {key: value for key, value in args.items() if key not in AUDIT_CSV_ARGS}
        ok = entry.get("ok")
        row = [
            entry.get("journal_seq"),
            _when(entry.get("at")),
            entry.get("account"),
            entry.get("role"),
            entry.get("command"),
            entry.get("transaction"),
            *(args.get(name) for name in AUDIT_CSV_ARGS),
            json.dumps(other, sort_keys=True) if other else "",
            "" if ok is None else str(ok).lower(),
            entry.get("code"),
            entry.get("message"),
        ]
        writer.writerow([defused(cell) for cell in row])


def round_events(events: list[dict[str, Any]], round_id: int) -> list[dict[str, Any]]:
    """Every event from round ``round_id``'s opening to its end (settled or voided): its
    cards, decisions, the pauses and resolutions in it and the news of the shoe meanwhile."""
    span: list[dict[str, Any]] = []
    for event in events:
        data = event.get("data") or {}
        if event["type"] == "round_opened" and data.get("round_id") == round_id:
            span = [event]
        elif span:
            span.append(event)
            ended = event["type"] in ("round_settled", "round_voided")
            if ended and data.get("round_id") == round_id:
                break
    return span


def _clock(at: Any) -> str:
    if not isinstance(at, int | float):
        return "--:--:--"
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S")


def say(args: argparse.Namespace, document: dict[str, Any]) -> None:
    if args.json:
        print_json(document)
    else:
        print(f"({document['note']})", flush=True)


def show_event(args: argparse.Namespace, event: dict[str, Any]) -> None:
    if args.json:
        print_json(event)
        return
    data = json.dumps(event.get("data") or {}, sort_keys=True, separators=(", ", ": "))
    print(f"#{event['seq']} {_clock(event.get('at'))} UTC {event['type']} {data}", flush=True)


def show_state(args: argparse.Namespace, availability: str | None, state: dict[str, Any]) -> None:
    if args.json:
        print_json({"availability": availability, "state": state})
    else:
        print(describe(state.get("table", "?"), availability, state), flush=True)


def describe(table: str, availability: str | None, state: dict[str, Any] | None) -> str:
    """A table's availability and state in a few lines, for a person."""
    if state is None:
        return f"table {table}: {availability or 'unknown'}, no state published yet"
    lines = [
        f"table {table}: {availability or 'availability unknown'}, {state.get('game')}, "
        f"{state.get('phase')} (event {state.get('seq')}, at {_clock(state.get('at'))} UTC)"
    ]
    shoe = state.get("shoe") or {}
    if shoe.get("id") is not None:
        lines.append(
            f"  shoe {shoe['id']}: {shoe.get('cards_left')} cards left, round "
            f"{shoe.get('round_number')}, cut card "
            + ("seen" if shoe.get("cut_card_seen") else "not seen")
        )
    else:
        lines.append("  no shoe: shuffle, then new-shoe")
    live = state.get("round")
    if live:
        lines.append(f"  round {live.get('id')} in play")
    awaiting = state.get("awaiting")
    if awaiting:
        what = ", ".join(f"{key} {value}" for key, value in awaiting.items() if key != "what")
        lines.append(f"  awaiting {awaiting.get('what')}" + (f" ({what})" if what else ""))
    pause = state.get("pause")
    if pause:
        by = pause.get("by") or "the table"
        lines.append(
            f"  PAUSED: {pause.get('reason')}: {pause.get('message')} (since "
            f"{_clock(pause.get('since'))} UTC, by {by})"
        )
        needs = pause.get("needs") or []
        lines.append("  needs: " + ("; ".join(needs) if needs else "nothing: a plain resume"))
    for hold in state.get("holds") or []:
        by = hold.get("by") or "the table process, stopping"
        lines.append(
            f"  HELD between rounds: {hold.get('reason')}: {hold.get('message')} (since "
            f"{_clock(hold.get('since'))} UTC, by {by})"
        )
    if "dealer" in state:  # tables of an older livetable do not say
        dealer = state["dealer"]
        lines.append(
            "  dealer: nobody signed in"
            if dealer is None
            else f"  dealer {dealer.get('staff_id')} (since {_clock(dealer.get('since'))} UTC)"
        )
    devices = state.get("devices") or {}
    camera = devices.get("camera_online")
    lines.append(
        f"  shoe {'online' if devices.get('shoe_online') else 'OFFLINE'}, camera "
        + ("none reported" if camera is None else "online" if camera else "OFFLINE")
    )
    return "\n".join(lines)
