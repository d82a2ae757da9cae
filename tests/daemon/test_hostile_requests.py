"""Hostile request payloads against the real daemon (``livetable run`` as a subprocess, its
shoe a simulator on a pty, a real mosquitto): each gets an error answer in plain words, in
one log line without a traceback, and the daemon goes on. Also: every answer echoes the
command as the request's topic named it (``open_round``, ``enter_card``), as the contract
says.

The table, the peer and the barrier are those of ``test_security.py``.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.daemon.test_security import (  # noqa: F401 - open_table, peers, tables: fixtures
    Peer,
    Table,
    barrier,
    open_table,
    peers,
    request_topic,
    response_topic,
    settled,
    status,
    tables,
    wait_online,
)

DEEP = 5_000


def deep_json(depth: int) -> bytes:
    """A request whose ``reason`` is an array nested ``depth`` deep (still under 16 KiB)."""
    return b'{"transaction": "t-deep", "reason": ' + b"[" * depth + b"]" * depth + b"}"


def test_deep_json_and_broken_utf8_are_answered_malformed_in_one_log_line(
    mqtt_broker: tuple[str, int],
    tables: Callable[..., Table],  # noqa: F811 - the fixture imported above
    peers: Callable[..., Peer],  # noqa: F811
) -> None:
    _host, port = mqtt_broker
    table = tables(port)
    table.daemon.verbose = 1  # refused requests are logged at INFO
    watch = peers(port, subscribe=("livetable/t1/#",)).wait_ready()
    table.daemon.start()
    wait_online(table, watch)
    before = settled(watch, "viewer", "viewer")
    log_start = len(table.daemon.log())

    cases = {
        "deep": (deep_json(DEEP), "nested"),
        "utf8": (b'{"transaction": "t-utf8", "reason": "caf\xe9"}', "UTF-8"),
    }
    for what, (payload, words) in cases.items():
        answer = watch.ask(
            request_topic("supervisor", "alice", "pause"),
            payload,
            answer_on=response_topic("alice"),
        ).json()
        assert answer["ok"] is False and answer["error"]["code"] == "malformed", (what, answer)
        assert answer["command"] == "pause", answer
        assert words in answer["message"], (what, answer)
        assert "codec" not in answer["message"], (what, answer)  # plain words, not Python's
    barrier(watch)
    assert table.daemon.alive(), table.daemon.log()[-3000:]
    log = table.daemon.log()[log_start:]
    assert "Traceback" not in log, log
    refused = [line for line in log.splitlines() if "request refused (malformed)" in line]
    assert len(refused) == 2, log
    assert "nested" in refused[0] and "UTF-8" in refused[1], refused
    after = status(watch, "viewer", "viewer")
    assert after["phase"] == before["phase"] and after["seq"] == before["seq"]


def test_duplicate_keys_and_control_characters_are_answered_malformed_and_change_nothing(
    mqtt_broker: tuple[str, int],
    tables: Callable[..., Table],  # noqa: F811 - the fixture imported above
    peers: Callable[..., Peer],  # noqa: F811
) -> None:
    """A key given twice (JSON's last one would win unseen) and a NUL or other control
    character in a field that is echoed, journaled or shown (the transaction, a reason, the
    resolution) are refused whole, in the error answer's format; the table is not paused."""
    _host, port = mqtt_broker
    table = tables(port)
    table.daemon.verbose = 1
    watch = peers(port, subscribe=("livetable/t1/#",)).wait_ready()
    table.daemon.start()
    wait_online(table, watch)
    before = settled(watch, "viewer", "viewer")
    log_start = len(table.daemon.log())

    cases = [
        (
            "pause",
            b'{"transaction": "t-1", "transaction": "t-2", "reason": "spill"}',
            None,
            "repeats",
        ),
        ("pause", b'{"transaction": "t-dup", "reason": "spill", "reason": "x"}', None, "repeats"),
        ("pause", b'{"transaction": "t-\\u0000", "reason": "spill"}', None, "control character"),
        ("pause", b'{"transaction": "t\\n2", "reason": "spill"}', None, "control character"),
        ("pause", b'{"transaction": "t-nul", "reason": "sp\\u0000ill"}', "t-nul", "reason"),
        ("pause", b'{"transaction": "t-esc", "reason": "\\u001b[2Jspill"}', "t-esc", "reason"),
        ("pause", b'{"transaction": "t-c1", "reason": "spill\\u0085"}', "t-c1", "reason"),
        ("resume", b'{"transaction": "t-res", "resolution": "burn\\u0000"}', "t-res", "resolution"),
    ]
    for command, payload, transaction, words in cases:
        answer = watch.ask(
            request_topic("supervisor", "alice", command),
            payload,
            answer_on=response_topic("alice"),
        ).json()
        assert answer["ok"] is False and answer["error"]["code"] == "malformed", (payload, answer)
        assert (answer["command"], answer["transaction"]) == (command, transaction), answer
        assert words in answer["message"], (payload, answer)
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in answer["message"])
    barrier(watch)
    assert table.daemon.alive(), table.daemon.log()[-3000:]
    log = table.daemon.log()[log_start:]
    refused = [line for line in log.splitlines() if "request refused (malformed)" in line]
    assert len(refused) == len(cases), log
    after = status(watch, "viewer", "viewer")
    assert after["phase"] == before["phase"] and after["seq"] == before["seq"]


def test_answers_echo_the_command_as_the_topic_named_it(
    open_table: tuple[Table, Peer],  # noqa: F811 - the fixture imported above
) -> None:
    """open_round and enter_card become the table's RoundRequested and a resume; their
    answers still name open_round and enter_card (docs/mqtt-api.md, The response)."""
    table, watch = open_table
    for role, account, command, fields in (
        ("platform", "platform", "open_round", {}),
        ("supervisor", "alice", "enter_card", {"card": "7H"}),
        ("supervisor", "alice", "resume", {}),
    ):
        answer = watch.ask(
            request_topic(role, account, command),
            {"transaction": f"t-{command}", **fields},
            answer_on=response_topic(account),
        ).json()
        # Refused (no shoe, not paused), by the table's own thread: the path every table
        # command's answer takes.
        assert answer["ok"] is False and answer["error"]["code"] == "refused", answer
        assert answer["command"] == command, answer
        # Asked again with the same transaction: the stored answer, with the same name.
        again = watch.ask(
            request_topic(role, account, command),
            {"transaction": f"t-{command}", **fields},
            answer_on=response_topic(account),
        ).json()
        assert again == answer
    assert table.daemon.alive(), table.daemon.log()[-3000:]
