"""``livetable ctl --table T ACTION``: a supervisor's actions on one table, from a shell.

It speaks the table's MQTT API through :mod:`controller.client.api_client` with the person's own
broker account, exactly as a console or a script would: the broker's ACL decides what the
account may send, the table checks every command against its state, and the journal records
the account as the broker saw it. It knows nothing of the daemon's internals (an
import-linter contract keeps it off the table, the drivers, the vision and the simulators).

Actions: ``status``, ``pause``, ``resume``, ``enter-card``, ``cancel`` (only with the id of
the round in play: the confirmation a script gives), ``end-shoe``, ``new-shoe``, ``watch``
(events and state as they come, caught up by ``seq`` on a gap), ``history`` (every event
of one round, from the ``events`` catch-up) and ``audit`` (every supervisor command the table
journaled, with its outcome, from the ``audit`` request; ``--csv`` for a spreadsheet, every
cell that a spreadsheet would run as a formula defused). Readable output by default,
``--json`` for scripts; the exit status is 0 only on the table's success answer, and every
failure is one line (an unreachable broker, refused credentials, an unknown table, the
table's refusal).

The password comes from ``--password-file``, ``$LIVETABLE_PASSWORD`` or a prompt on a
terminal, in that order; it is never echoed, printed or logged.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from controller.kernel.api_commands import ACTING_COMMANDS, COMMANDS, ROLES
from controller.kernel.cli_support import (
    JSON_HELP,
    default_to_help,
    examples,
    positive_int,
    positive_seconds,
    print_json,
)
from controller.kernel.errors import TableError
from controller.kernel.vocabulary import RESOLUTIONS
from controller.mqtt.broker_name import (
    DEFAULT_PORT,
    DEFAULT_TLS_PORT,
    FORMS,
    BrokerName,
    parse_broker_name,
)
from controller.tools.ctl_text import (
    audit_lines,
    describe,
    round_events,
    say,
    show_event,
    show_state,
    write_audit_csv,
)

PASSWORD_ENV = "LIVETABLE_PASSWORD"
DEFAULT_MQTT = "5"
# How long a table has to show itself (its retained availability or state) once subscribed.
DEFAULT_WAIT_S = 3.0
# How long the broker has to take the connection, and the table to answer a request.
DEFAULT_TIMEOUT_S = 10.0
# The commands that act on the table (the API's one list): sent only while its daemon is
# online (a request sent to an offline table would wait at the broker and be executed
# whenever it comes back).
ACTING: Final = ACTING_COMMANDS
# The API's commands ctl has no action for, and why; every other command is an action of
# the same name (``end_shoe``: ``end-shoe``), its help the list's (a test holds both).
NOT_OFFERED: Final = {
    "events": "watch and history page it",
    "open_round": "the platform opens the rounds (the console offers it for a table whose "
    "platform is away)",
    "decide": "the platform's answer to a player's decision request",
    "pictures": "pictures are images: the console's round history shows them, and "
    "journal export --bundle carries them",
}
# The actions that are ctl's own, in its own words: status shows the retained state and
# availability (it sends nothing), watch and history follow the table's events.
OWN_ACTIONS: Final = ("status", "watch", "history")


class CtlError(TableError):
    """What ``livetable ctl`` could not do, in one line."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ctl",
        help="supervise a table from the shell: status, pause, resume, cancel, new shoe",
        description="Act on one table as a supervisor, over its MQTT API, with your own "
        "broker account: the broker decides what the account may send and the table checks "
        "every command against its state. The exit status is 0 only when the table answers "
        "success.\n\n"
        f"The password is read from --password-file, else ${PASSWORD_ENV}, else asked for "
        "on the terminal; it is never echoed or logged. Give the broker, account and table "
        "before the action.",
        epilog=examples(
            "livetable ctl --table t1 --user alice status",
            "livetable ctl --table t1 --user alice pause --reason 'spilled drink'",
            "livetable ctl --table t1 --user alice resume --resolution burn",
            "livetable ctl --table t1 --user alice cancel --round 42 --json",
            "livetable ctl --table t1 --user viewer --role viewer audit --csv > audit.csv",
        ),
    )
    parser.add_argument("--table", required=True, help="the table id (its [table] id)")
    parser.add_argument(
        "--broker",
        default="127.0.0.1",
        help=f"the MQTT broker: {FORMS} (a cluster's nodes, separated by commas, tried in "
        "turn: the next when one fails); mqtts:// speaks TLS, trusting --tls-ca or the "
        "system's CAs; an account in the URL is the --user (its password is never taken "
        "from the command line)",
    )
    parser.add_argument(
        "--port",
        type=positive_int,
        default=None,
        help=f"the broker's port where --broker names none (default {DEFAULT_PORT}, "
        f"{DEFAULT_TLS_PORT} with --tls-ca)",
    )
    parser.add_argument(
        # --mqtt as the demo's: --protocol is a shoe protocol everywhere else.
        "--mqtt",
        default=None,
        choices=("5", "3.1.1"),
        help="the MQTT version (default 5, or the --broker URL's ?mqtt=; 3.1.1 for a broker "
        "that speaks only that, NATS)",
    )
    parser.add_argument(
        "--tls-ca", help="speak TLS to the broker, trusting this CA file (not the system's)"
    )
    parser.add_argument("--user", help="your broker account (none: anonymous)")
    parser.add_argument(
        "--role",
        default="supervisor",
        # The API's roles, the default first.
        choices=("supervisor", *(role for role in ROLES if role != "supervisor")),
        help="the role the account sends requests under (default supervisor)",
    )
    parser.add_argument(
        "--password-file", type=Path, help="a file whose first line is the account's password"
    )
    parser.add_argument(
        "--prefix", default="livetable", help="the API's topic prefix (default livetable)"
    )
    parser.add_argument(
        "--timeout-s",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        help="how long the broker has to take the connection and the table to answer",
    )
    parser.add_argument(
        "--wait-s",
        type=positive_seconds,
        default=DEFAULT_WAIT_S,
        help="how long the table has to show its state before it counts as unknown",
    )
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    def action(name: str, help_text: str, example: str, run: Callable[..., int]) -> Any:
        sub = actions.add_parser(
            name,
            help=help_text,
            description=help_text[0].upper() + help_text[1:] + ".",
            epilog=examples(f"livetable ctl --table t1 --user alice {example}"),
        )
        # Also after the action; the top-level --json counts as well.
        sub.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=JSON_HELP)
        sub.set_defaults(func=lambda args: _run(args, run))
        return sub

    def command(name: str, example: str, run: Callable[..., int]) -> Any:
        """The action that sends the API's command ``name``: named and helped by the list."""
        return action(COMMANDS[name].ctl_action, COMMANDS[name].help, example, run)

    action("status", "show the table's state and availability", "status", _status)
    pause = command("pause", "pause --reason 'dispute'", _pause)
    pause.add_argument("--reason", required=True, help="why (journaled, shown to everyone)")
    resume = command("resume", "resume", _resume)
    resume.add_argument(
        "--resolution",
        choices=[resolution for resolution in RESOLUTIONS if resolution],
        help="what the pause needs (see status: needs)",
    )
    resume.add_argument("--card", help="the card, with --resolution enter_card (KH, 10h)")
    enter = command("enter_card", "enter-card KH", _enter)
    enter.add_argument("card", help="the card as read off the felt (KH, 10h, ts)")
    cancel = command("cancel", "cancel --round 42", _cancel)
    cancel.add_argument(
        "--round",
        type=positive_int,
        required=True,
        help="the id of the round in play: refused unless it is that round",
    )
    cancel.add_argument("--reason", default="", help="why (journaled)")
    end = command("end_shoe", "end-shoe", _end_shoe)
    end.add_argument("--reason", default="", help="why (journaled)")
    command("new_shoe", "new-shoe", _new_shoe)
    sign_in = command("dealer_sign_in", "dealer-sign-in D-1043", _dealer_sign_in)
    sign_in.add_argument("staff_id", help="the dealer's staff id (D-1043)")
    command("dealer_sign_out", "dealer-sign-out", _dealer_sign_out)
    command("dealer_change", "dealer-change", _dealer_change)
    command("drain", "drain", _drain)
    command("resume_rounds", "resume-rounds", _resume_rounds)
    watch = action(
        "watch", "follow the table's events and state until interrupted", "watch", _watch
    )
    watch.add_argument("--count", type=positive_int, help="stop after this many new events")
    history = action(
        "history", "every event of one round, for a dispute", "history --round 42", _history
    )
    history.add_argument("--round", type=positive_int, required=True, help="the round id")
    audit = command("audit", "audit --since 1200 --csv", _audit)
    audit.add_argument(
        "--since",
        type=non_negative_int,
        default=0,
        help="list the commands after this journal row (default 0: all)",
    )
    audit.add_argument(
        "--csv",
        action="store_true",
        help="CSV with a header row on stdout, for a spreadsheet (formula cells defused)",
    )
    default_to_help(parser)


def non_negative_int(text: str) -> int:
    """An argparse type: an integer of 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


# -- connecting ---------------------------------------------------------------------------


def read_password(args: argparse.Namespace) -> str | None:
    """The account's password: ``--password-file`` (its first line), ``$LIVETABLE_PASSWORD``,
    or a prompt that does not echo, on a terminal; None without an account or any source."""
    if args.password_file is not None:
        lines = args.password_file.read_text().splitlines()
        return lines[0] if lines else ""
    if os.environ.get(PASSWORD_ENV):
        return os.environ[PASSWORD_ENV]
    if args.user and sys.stdin.isatty():
        return getpass.getpass(f"password for {args.user}: ")
    return None


# A CONNACK's "unsupported protocol version" (MQTT 5's 0x84; paho maps MQTT 3.1.1's return
# code 1 onto it): nats-server answers an MQTT 5 CONNECT so.
UNSUPPORTED_PROTOCOL_VERSION = 0x84


class _Problems(logging.Handler):
    """The connection's problems as the API client's watch names them, kept for the one
    line of error rather than logged beside it."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def ctl_broker(args: argparse.Namespace) -> BrokerName:
    """``--broker`` as the one parser reads it (with ``--port``, ``--tls-ca`` and ``--mqtt``
    beside it), the account and MQTT version it names settled into ``args``; CtlError in one
    line for a bad one."""
    try:
        name = parse_broker_name(args.broker, tls=args.tls_ca is not None, default_port=args.port)
    except ValueError as error:
        raise CtlError(f"--broker: {error}") from None
    if name.login is not None:
        user, password = name.login
        if password is not None:
            # A password on the command line shows in ps and the shell's history.
            raise CtlError(
                f"--broker: ctl takes no password in the URL: give --password-file or "
                f"${PASSWORD_ENV} (the user may stay: mqtt://{user}@host)"
            )
        if args.user is not None and args.user != user:
            raise CtlError(f"--user {args.user} and the --broker URL's user {user} disagree")
        args.user = user
    if name.protocol is not None and args.mqtt not in (None, name.protocol):
        raise CtlError(
            f"--mqtt {args.mqtt} and the --broker URL's mqtt={name.protocol} disagree: give one"
        )
    args.mqtt = name.protocol or args.mqtt or DEFAULT_MQTT
    return name


def connect(args: argparse.Namespace) -> Any:
    """An API client of ``args.table`` for the account, connected and subscribed, with the
    table's retained availability or state in hand; CtlError in one line otherwise."""
    import paho.mqtt.client as mqtt

    from controller.client.api_client import Account, ApiClient
    from controller.mqtt.connection import broker_text, refusal_text

    name = ctl_broker(args)
    password = read_password(args)
    brokers = list(name.nodes)
    host, port = name.host, name.port
    where = (
        f"the MQTT broker at {broker_text(host, port)}"
        if len(brokers) == 1
        else f"the MQTT brokers at {', '.join(broker_text(*each) for each in brokers)}"
    )
    log = logging.getLogger("controller.client.api_client")
    problems = _Problems()
    log.addHandler(problems)
    # Without -v the problem is said once, in the error line; with -v the log has it too.
    quiet = log.getEffectiveLevel() > logging.INFO
    if quiet:
        log.propagate = False
    client_id = f"{args.user or 'anonymous'}-ctl-{uuid.uuid4().hex[:8]}"
    client = ApiClient(
        host,
        port,
        args.table,
        Account(args.role, args.user, password),
        prefix=args.prefix,
        protocol=mqtt.MQTTv5 if args.mqtt == "5" else mqtt.MQTTv311,
        client_id=client_id,
        tls_ca=args.tls_ca,
        tls=name.tls,
        hosts=brokers,
    )
    try:
        deadline = time.monotonic() + args.timeout_s
        while not client.connected.is_set() and client.refused is None:
            # A command line gives up at the first problem (paho would try again and again),
            # or with a cluster once every node had one.
            if len(problems.lines) >= len(brokers) and client.refused is None:
                # A refused CONNACK is said by the watch just before the client notes it.
                client.connected.wait(0.2)
                if client.refused is None:
                    raise CtlError(
                        "; ".join(line.removeprefix(f"{client_id}: ") for line in problems.lines)
                    )
                break
            if time.monotonic() > deadline:
                raise CtlError(f"{where} did not answer within {args.timeout_s:g} s")
            client.connected.wait(0.05)
        if client.refused is not None:
            if getattr(client.refused, "value", None) == UNSUPPORTED_PROTOCOL_VERSION:
                other = "3.1.1" if args.mqtt == "5" else "5"
                raise CtlError(f"{where} refused MQTT {args.mqtt}: try --mqtt {other}")
            refusal = refusal_text(client.refused, args.mqtt, args.user, client_id)
            raise CtlError(f"{where} {refusal}")
        if not client.subscribed.wait(max(0.0, deadline - time.monotonic())):
            raise CtlError(f"{where} did not confirm the subscriptions")
        seen = time.monotonic() + args.wait_s
        while client.state is None and client.availability is None:
            if time.monotonic() > seen:
                raise CtlError(
                    f"no table {args.table!r} on {where} (no retained state or availability "
                    f"within {args.wait_s:g} s: check --table, --prefix and the account's ACL)"
                )
            time.sleep(0.02)
        # One may follow the other by a moment: both are retained.
        until = time.monotonic() + min(args.wait_s, 1.0)
        while (client.state is None or client.availability is None) and time.monotonic() < until:
            time.sleep(0.02)
        return client
    except BaseException:
        close(client)
        raise
    finally:
        log.removeHandler(problems)
        log.propagate = True


def close(client: Any) -> None:
    client.close()


def _run(args: argparse.Namespace, run: Callable[..., int]) -> int:
    client = connect(args)
    try:
        return run(args, client)
    finally:
        close(client)


def _ask(args: argparse.Namespace, client: Any, command: str, **fields: Any) -> dict[str, Any]:
    """Send ``command`` and return the table's answer, ok or not; CtlError if there is none
    (the broker would not pass it on, or the table did not answer in time)."""
    from controller.client.api_client import BrokerRefused

    try:
        answer: dict[str, Any] = client.request(command, args.timeout_s, **fields)
    except BrokerRefused as refusal:
        raise CtlError(
            f"the broker refused to pass {command} on for {args.user or 'anonymous'} as "
            f"{args.role} ({refusal}: the account may not send that)"
        ) from None
    except TimeoutError:
        raise CtlError(
            f"table {args.table!r} did not answer {command} within {args.timeout_s:g} s"
        ) from None
    return answer


def _refused(args: argparse.Namespace, command: str, answer: dict[str, Any]) -> CtlError:
    code = (answer.get("error") or {}).get("code", "error")
    return CtlError(f"table {args.table!r} refused {command} ({code}): {answer.get('message')}")


def _command(args: argparse.Namespace, client: Any, command: str, **fields: Any) -> int:
    """Send ``command`` and report the table's answer: 0 on success, CtlError otherwise."""
    if command in ACTING and client.availability == "offline":
        raise CtlError(f"table {args.table!r} is offline (its daemon is not running): nothing sent")
    answer = _ask(args, client, command, **fields)
    if args.json:
        print_json(answer)
    if not answer.get("ok"):
        raise _refused(args, command, answer)
    if not args.json:
        print(f"{args.table}: {answer.get('message')}", flush=True)
    return 0


# -- the actions --------------------------------------------------------------------------


def _status(args: argparse.Namespace, client: Any) -> int:
    state = client.state
    if args.json:
        print_json({"table": args.table, "availability": client.availability, "state": state})
        return 0
    print(describe(args.table, client.availability, state), flush=True)
    return 0


def _pause(args: argparse.Namespace, client: Any) -> int:
    return _command(args, client, "pause", reason=args.reason)


def _resume(args: argparse.Namespace, client: Any) -> int:
    fields: dict[str, Any] = {}
    if args.resolution:
        fields["resolution"] = args.resolution
    if args.card is not None:
        if args.resolution not in (None, "enter_card"):
            raise CtlError("--card goes with --resolution enter_card")
        fields["resolution"] = "enter_card"
        fields["card"] = args.card
    return _command(args, client, "resume", **fields)


def _enter(args: argparse.Namespace, client: Any) -> int:
    return _command(args, client, "enter_card", card=args.card)


def _cancel(args: argparse.Namespace, client: Any) -> int:
    # Naming the round is the confirmation that the person (or script) means that round and
    # no other: checked here against the state, and by the table as it takes the command.
    in_play = ((client.state or {}).get("round") or {}).get("id")
    if in_play is None:
        raise CtlError(f"no round is in play on table {args.table!r}: nothing cancelled")
    if in_play != args.round:
        raise CtlError(
            f"round {args.round} is not the round in play on table {args.table!r} (round "
            f"{in_play} is): nothing cancelled"
        )
    # The table checks it again when it takes the command (the round may end meanwhile).
    return _command(args, client, "cancel", reason=args.reason, round_id=args.round)


def _end_shoe(args: argparse.Namespace, client: Any) -> int:
    return _command(args, client, "end_shoe", reason=args.reason)


def _new_shoe(args: argparse.Namespace, client: Any) -> int:
    return _command(args, client, "new_shoe")


def _dealer_sign_in(args: argparse.Namespace, client: Any) -> int:
    return _command(args, client, "dealer_sign_in", staff_id=args.staff_id)


def _dealer_sign_out(args: argparse.Namespace, client: Any) -> int:
    return _command(args, client, "dealer_sign_out")


def _dealer_change(args: argparse.Namespace, client: Any) -> int:
    return _command(args, client, "dealer_change")


def _drain(args: argparse.Namespace, client: Any) -> int:
    return _command(args, client, "drain")


def _resume_rounds(args: argparse.Namespace, client: Any) -> int:
    return _command(args, client, "resume_rounds")


def _watch(args: argparse.Namespace, client: Any) -> int:
    """Print every event as it comes and each change of phase, until interrupted or
    ``--count`` new events. A gap (an event past the next ``seq``, or a state ahead of the
    last event applied: events published while the connection was down) is caught up from
    the table's ``events`` before going on, so no event is missed or shown twice."""
    from controller.client.api_client import EventSeries

    series = EventSeries()
    state = client.state or {}
    series.epoch_is(state.get("epoch"))
    series.last_seq = int(state.get("seq") or 0)
    shown_phase: Any = None
    seen = 0
    new = 0
    if state:
        show_state(args, client.availability, state)
        shown_phase = state.get("phase")

    def show(events: list[dict[str, Any]]) -> bool:
        nonlocal new
        for event in events:
            show_event(args, event)
            new += 1
            if args.count is not None and new >= args.count:
                return True
        return False

    def catch_up() -> bool:
        before = len(series.events)
        client.catch_up(series, timeout=args.timeout_s)
        return show(series.events[before:])

    while True:
        # The state first: the table publishes a state after its events, so every event
        # up to the state's seq that reached this client is in ``client.events`` by then.
        state = client.state or {}
        if series.epoch_is(state.get("epoch")):
            say(args, {"note": "another journal (epoch): its events start again at 1"})
        arrived = client.events[seen:]
        seen += len(arrived)
        for event in arrived:
            verdict = series.add(event)
            if verdict == "gap":
                if catch_up():
                    return 0
                series.add(event)  # caught up to it or past it: a repeat now
            elif verdict == "new" and show([event]):
                return 0
        ahead = state.get("epoch") == series.epoch and int(state.get("seq") or 0) > series.last_seq
        if ahead and catch_up():
            return 0
        if state and state.get("phase") != shown_phase:
            show_state(args, client.availability, state)
            shown_phase = state.get("phase")
        time.sleep(0.05)


def _history(args: argparse.Namespace, client: Any) -> int:
    series = client.catch_up(timeout=args.timeout_s)
    events = round_events(series.events, args.round)
    if not events:
        raise CtlError(
            f"round {args.round} is not in table {args.table!r}'s events (epoch {series.epoch})"
        )
    for event in events:
        show_event(args, event)
    last = events[-1]
    if not args.json and last["type"] not in ("round_settled", "round_voided"):
        print(f"(round {args.round} is still in play)", flush=True)
    return 0


def _audit(args: argparse.Namespace, client: Any) -> int:
    entries, epoch = audit_entries(args, client)
    if args.csv:
        write_audit_csv(entries, sys.stdout)
        sys.stdout.flush()
    elif args.json:
        for entry in entries:
            print_json(entry)
    else:
        print(
            f"table {args.table}: {len(entries)} supervisor command(s) after journal row "
            f"{args.since} (journal epoch {epoch}; times UTC)",
            flush=True,
        )
        for line in audit_lines(entries):
            print(line, flush=True)
    return 0


def audit_entries(args: argparse.Namespace, client: Any) -> tuple[list[dict[str, Any]], str]:
    """Every entry of the table's audit after ``args.since``, paged while ``more``, and the
    journal's epoch; CtlError on a refusal, or if the journal changed meanwhile."""
    entries: list[dict[str, Any]] = []
    since = args.since
    epoch: str | None = None
    while True:
        answer = _ask(args, client, "audit", since=since)
        if not answer.get("ok"):
            raise _refused(args, "audit", answer)
        data = answer["data"]
        if epoch is not None and data["epoch"] != epoch:
            raise CtlError(
                f"table {args.table!r} started another journal while its audit was read: "
                "run it again"
            )
        epoch = data["epoch"]
        entries += data["entries"]
        if not data["more"] or data["last"] == since:
            return entries, epoch
        since = data["last"]
