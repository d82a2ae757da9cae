"""The console over real HTTP against the real thing: ``livetable console`` as a subprocess,
two ``livetable run`` daemons with simulated shoes, a mosquitto with the shipped ACL and
one connection per account (``console_studio``, :mod:`tests.support.console`).

Supervisors act through the console under their own account (the table journals them);
viewers and forged requests are refused before anything is sent; the sign-in throttle
grows; a table whose daemon dies shows offline on the live stream; nothing the console
logs names a password or a session cookie.
"""

from __future__ import annotations

import csv
import io
import json
import signal
from collections.abc import Callable
from typing import Any

from controller.kernel.api_commands import COMMANDS
from controller.kernel.presentation import PRESENTATIONS
from tests.support.console import ConsoleHttp, ConsoleStudio
from tests.support.wait import wait_for_item, wait_until

TIMEOUT_S = 30.0


def signed_in(studio: ConsoleStudio, name: str) -> ConsoleHttp:
    browser = ConsoleHttp(studio.url)
    answer = browser.sign_in(name, studio.passwords[name])
    assert answer.status == 303, (answer.status, answer.text)
    assert answer.headers["Location"] == "/"
    # The tables show themselves (their retained messages) a moment after the sign-in.
    wait_until(lambda: browser.tables().keys() == set(studio.tables), TIMEOUT_S, "every tile")
    return browser


def commanded_by(studio: ConsoleStudio, table: str) -> list[tuple[str, str]]:
    """(account, command) of every supervisor command in the table's journal."""
    rows = studio.tables[table].journal_rows("SupervisorCommanded")
    return [(row["by"], row["command"]) for row in rows]


def test_a_supervisor_pauses_and_resumes_one_table_under_her_own_name(
    console_studio: ConsoleStudio,
) -> None:
    studio = console_studio
    alice = signed_in(studio, "alice")
    session = alice.get("/api/session").json()
    assert session["account"] == "alice" and session["role"] == "supervisor", session
    assert session["link"] == {"up": True, "why": ""}
    # How each game is shown reaches the page from the console, as the games declare it.
    games = alice.get("/api/games").json()
    assert games == {game: shown.as_json() for game, shown in PRESENTATIONS.items()}
    assert games["baccarat"]["hands"] == ["player", "banker"]
    assert ConsoleHttp(studio.url).get("/api/games").status == 401
    # So are the commands the page offers, as the API's one list declares them.
    commands = alice.get("/api/commands").json()
    assert commands == {name: COMMANDS[name].as_json() for name in commands}
    assert commands["pause"]["fields"] == [{"name": "reason", "type": "string", "required": True}]
    assert ConsoleHttp(studio.url).get("/api/commands").status == 401
    tiles = wait_until(
        lambda: (t := alice.tables()).keys() == {"t1", "t2"} and t, TIMEOUT_S, "both tiles"
    )
    assert all(tile["status"] == "running" for tile in tiles.values()), tiles
    assert tiles["t1"]["state"]["game"] == "baccarat"
    assert tiles["t2"]["state"]["game"] == "blackjack-classic"
    before = {table: len(commanded_by(studio, table)) for table in studio.tables}

    answer = alice.act("t1", "pause", reason="spilled drink")
    assert answer.status == 200 and answer.json()["ok"], answer.text
    paused = studio.wait_state("t1", lambda s, _f: s["phase"] == "PAUSED", "paused")
    assert paused["pause"]["by"] == "alice" and paused["pause"]["reason"] == "supervisor"
    # The console's tiles: t1 paused by alice first, t2 still running.
    tiles = wait_until(
        lambda: (t := alice.tables())["t1"]["status"] == "paused" and t, TIMEOUT_S, "t1 paused"
    )
    assert list(tiles) == ["t1", "t2"] and tiles["t2"]["status"] == "running"
    assert tiles["t1"]["paused_by"] == "alice"
    assert studio.state("t2")["phase"] == "SHOE_READY"  # type: ignore[index]

    answer = alice.act("t1", "resume")
    assert answer.json()["ok"], answer.text
    studio.wait_state("t1", lambda s, _f: s["phase"] == "SHOE_READY", "resumed")
    # The table's refusal comes back in its own words.
    refused = alice.act("t1", "resume").json()
    assert refused["ok"] is False and refused["code"] == "refused", refused
    assert "not paused" in refused["message"], refused

    journaled = commanded_by(studio, "t1")[before["t1"] :]
    assert journaled == [("alice", "pause"), ("alice", "resume"), ("alice", "resume")]
    assert commanded_by(studio, "t2")[before["t2"] :] == []


def test_viewers_and_forged_requests_are_refused_before_anything_is_sent(
    console_studio: ConsoleStudio,
) -> None:
    studio = console_studio
    before = len(commanded_by(studio, "t1"))
    viewer = signed_in(studio, "viewer")
    session = viewer.get("/api/session").json()
    assert session["role"] == "viewer", session
    assert viewer.tables().keys() == {"t1", "t2"}
    refused = viewer.act("t1", "pause", reason="x")
    assert refused.status == 403, refused.text
    assert refused.json() == {
        "ok": False,
        "code": "forbidden",
        "message": "viewers have no actions",
    }

    alice = signed_in(studio, "alice")
    # No CSRF header, a wrong one, the viewer's token in alice's session, another origin.
    forged: list[tuple[str, Any]] = [
        ("no token", alice.post_json("/api/tables/t1/request", {"command": "pause"}, csrf=None)),
        ("wrong token", alice.post_json("/api/tables/t1/request", {"command": "pause"}, csrf="x")),
        (
            "another session's token",
            alice.post_json("/api/tables/t1/request", {"command": "pause"}, csrf=viewer.csrf),
        ),
        (
            "another origin",
            alice.post_json(
                "/api/tables/t1/request", {"command": "pause"}, origin="http://evil.example"
            ),
        ),
    ]
    for what, answer in forged:
        assert answer.status == 403, (what, answer.status, answer.text)
        assert answer.json()["code"] == "forbidden", what
    # No session at all.
    stranger = ConsoleHttp(studio.url)
    assert stranger.act("t1", "pause", reason="x").status == 401
    assert stranger.get("/api/tables").status == 401
    page = stranger.get("/")
    assert page.status == 303 and page.headers["Location"] == "/signin"
    # A command the console does not offer, a field the command does not take.
    bad = alice.act("t1", "decide", decision="H")
    assert bad.status == 400 and bad.json()["code"] == "malformed", bad.text
    bad = alice.act("t1", "pause", reason="x", transaction="mine")
    assert bad.status == 400 and bad.json()["code"] == "malformed", bad.text

    # Nothing reached the table: a request it answers comes after all of those.
    assert alice.act("t1", "resume").json()["code"] == "refused"
    assert studio.state("t1")["phase"] == "SHOE_READY"  # type: ignore[index]
    assert commanded_by(studio, "t1")[before:] == [("alice", "resume")]


def test_the_stream_checks_its_origin_and_shows_a_dead_table_offline(
    console_studio: ConsoleStudio,
) -> None:
    studio = console_studio
    alice = signed_in(studio, "alice")
    other = alice.stream(origin="http://evil.example")
    assert other.status == 403, other.status
    stranger = ConsoleHttp(studio.url).stream()
    assert stranger.status == 401
    stream = alice.stream()
    try:
        assert stream.status == 200
        assert stream.headers["Content-Type"].startswith("text/event-stream")
        kind, hello = wait_for_item(stream.events, lambda e: True, TIMEOUT_S, "the hello")
        assert kind == "hello" and isinstance(hello["now"], float)
        kind, link = wait_for_item(stream.events, lambda e: True, TIMEOUT_S, "the link")
        assert (kind, link) == ("link", {"up": True, "why": ""})

        assert studio.tables["t2"].daemon.kill(signal.SIGKILL) == -signal.SIGKILL
        seen: list[tuple[str, Any]] = []
        wait_for_item(
            stream.events,
            lambda e: e[0] == "tile" and e[1]["table"] == "t2" and e[1]["status"] == "offline",
            TIMEOUT_S,
            "t2's tile offline",
            taken=seen,
        )
        assert not any(
            kind == "tile" and tile["table"] == "t1" and tile["status"] != "running"
            for kind, tile in seen
        ), seen
        tiles = alice.tables()
        assert tiles["t2"]["status"] == "offline" and tiles["t2"]["availability"] == "offline"
        assert tiles["t1"]["status"] == "running"
        assert list(tiles) == ["t2", "t1"], "offline before running"
        # Nothing is sent to an offline table (it would run whenever the table came back).
        answer = alice.act("t2", "pause", reason="x").json()
        assert answer["ok"] is False and answer["code"] == "offline", answer
    finally:
        stream.close()


def test_failed_sign_ins_wait_longer_each_time_and_nothing_secret_is_logged(
    console_studio: ConsoleStudio,
) -> None:
    studio = console_studio
    browser = ConsoleHttp(studio.url)
    wrong = browser.sign_in("bob", "not-the-password")
    assert wrong.status == 401 and "Wrong account name or password" in wrong.text, wrong.text
    assert "livetable_session" not in browser.cookies
    # At once again: refused before the broker is asked, and the page says how long.
    throttled = browser.sign_in("bob", studio.passwords["bob"])
    assert throttled.status == 429, throttled.text
    assert throttled.headers["Retry-After"] == "1"
    assert "wait 1 s" in throttled.text
    # Once the second has passed: another failure, and now two seconds.
    wait_until(
        lambda: (a := browser.sign_in("bob", "still-wrong")).status != 429 and a,
        TIMEOUT_S,
        "the first delay over",
    )
    again = browser.sign_in("bob", studio.passwords["bob"])
    assert again.status == 429 and again.headers["Retry-After"] == "2", again.text
    # The right password once the delay is over: signed in, and the count starts again.
    answer = wait_until(
        lambda: (a := browser.sign_in("bob", studio.passwords["bob"])).status != 429 and a,
        TIMEOUT_S,
        "the second delay over",
    )
    assert answer.status == 303, answer.text
    session_cookie = browser.cookies["livetable_session"]
    assert len(session_cookie) >= 43  # 256 bits, URL-safe base64
    assert browser.get("/api/session").json()["account"] == "bob"
    # Signing out ends the session (and needs the CSRF header).
    assert browser.post_json("/signout", {}, csrf=None).status == 403
    assert browser.post_json("/signout", {}).status == 200
    assert browser.get("/api/session").status == 401

    alice = signed_in(studio, "alice")
    alice_cookie = alice.cookies["livetable_session"]
    alice.act("t1", "pause", reason="log check")
    alice.act("t1", "resume")
    log = studio.console.log() if studio.console else ""
    assert "alice" in log and "bob" in log, "the log says who signed in"
    for secret in (*studio.passwords.values(), session_cookie, alice_cookie, alice.csrf):
        assert secret and secret not in log, "a secret in the console's log"


def test_the_audit_lists_each_command_with_its_answer_and_its_csv_runs_no_formula(
    console_studio: ConsoleStudio,
) -> None:
    studio = console_studio
    alice = signed_in(studio, "alice")
    formula = '=HYPERLINK("http://evil.example","spilled drink")'
    assert alice.act("t1", "pause", reason=formula).json()["ok"]
    # Refused: nothing was drawn out of turn (a second pause would nest, not be refused).
    assert alice.act("t1", "resume", resolution="burn").json()["code"] == "refused"
    assert alice.act("t1", "resume").json()["ok"]

    viewer = signed_in(studio, "viewer")  # viewers read the audit too
    audit = viewer.get("/api/tables/t1/audit").json()
    assert audit["table"] == "t1" and audit["epoch"] == studio.state("t1")["epoch"]  # type: ignore[index]
    entries = [(e["account"], e["command"], e["ok"], e["code"]) for e in audit["entries"]]
    assert entries == [
        ("bob", "new_shoe", True, None),
        ("alice", "pause", True, None),
        ("alice", "resume", False, "refused"),
        ("alice", "resume", True, None),
    ], entries
    assert audit["entries"][1]["args"] == {"reason": formula}
    seqs = [e["journal_seq"] for e in audit["entries"]]
    assert seqs == sorted(seqs)
    later = viewer.get(f"/api/tables/t1/audit?since={seqs[1]}").json()["entries"]
    assert [e["journal_seq"] for e in later] == seqs[2:]
    assert viewer.get("/api/tables/t2/audit").json()["entries"][0]["account"] == "bob"

    sheet = viewer.get("/api/tables/t1/audit.csv")
    assert sheet.status == 200 and sheet.headers["Content-Type"].startswith("text/csv")
    assert 'filename="t1-audit.csv"' in sheet.headers["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(sheet.text)))
    assert rows[0] == [
        "journal_seq",
        "at",
        "time_utc",
        "account",
        "role",
        "command",
        "transaction",
        "args",
        "ok",
        "code",
        "message",
    ]
    assert [(r[3], r[5]) for r in rows[1:]] == [(a, c) for a, c, _ok, _code in entries]
    # The reason is inside the args' JSON; a cell that itself starts like a formula is
    # defused, and nothing in the sheet starts with one.
    assert json.loads(rows[2][7]) == {"reason": formula}
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)
    assert viewer.get("/api/tables/t9/audit").status == 404
    assert ConsoleHttp(studio.url).get("/api/tables/t1/audit.csv").status == 401


def test_under_mqtt_3_1_1_the_role_comes_from_a_tables_answer(
    console_studio_with: Callable[..., ConsoleStudio],
) -> None:
    """MQTT 3.1.1 brokers drop what the ACL refuses without a word: the console tells a
    supervisor from a viewer by whether a table answers a ``status`` under that role."""
    studio = console_studio_with(protocol="3.1.1")
    alice, viewer = signed_in(studio, "alice"), signed_in(studio, "viewer")
    assert alice.get("/api/session").json()["role"] == "supervisor"
    assert viewer.get("/api/session").json()["role"] == "viewer"
    assert viewer.act("t1", "pause", reason="x").status == 403
    assert alice.act("t1", "pause", reason="3.1.1").json()["ok"]
    paused = studio.wait_state("t1", lambda s, _f: s["phase"] == "PAUSED", "paused")
    assert paused["pause"]["by"] == "alice"


def test_while_the_consoles_broker_link_is_down_every_tile_is_unknown(
    console_studio: ConsoleStudio,
) -> None:
    """The broker stops: the console cannot tell what the tables do, so it says its link is
    down and every tile unknown (never offline: the tables may be playing on); when the
    broker is back, the link is up and the tiles running again."""
    studio = console_studio
    alice = signed_in(studio, "alice")
    stream = alice.stream()
    try:
        wait_for_item(stream.events, lambda e: e[0] == "link", TIMEOUT_S, "the first link")
        studio.broker.stop()
        seen: list[tuple[str, Any]] = []
        link = wait_for_item(stream.events, lambda e: e[0] == "link", TIMEOUT_S, "link down")
        assert link[1]["up"] is False and link[1]["why"], link
        for table in ("t1", "t2"):
            if not any(
                k == "tile" and (t["table"], t["status"]) == (table, "unknown") for k, t in seen
            ):
                wait_for_item(
                    stream.events,
                    lambda e, table=table: (
                        e[0] == "tile" and (e[1]["table"], e[1]["status"]) == (table, "unknown")
                    ),
                    TIMEOUT_S,
                    f"{table}'s tile unknown",
                    taken=seen,
                )
        assert not any(k == "tile" and t["status"] == "offline" for k, t in seen), seen
        assert alice.get("/api/session").json()["link"]["up"] is False
        studio.broker.restart()
        wait_for_item(
            stream.events, lambda e: e == ("link", {"up": True, "why": ""}), TIMEOUT_S, "link up"
        )
        wait_until(
            lambda: all(t["status"] == "running" for t in alice.tables().values()),
            TIMEOUT_S,
            "every tile running again",
        )
    finally:
        stream.close()
