"""The console's pages and read-only API over real HTTP, against the real studio: security
headers and cookies, a round's history, the faces still possible, a session that expires,
a table that goes stale, and a clean stop with streams open."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from controller.console.fleet import FACES
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


def test_headers_cookies_and_static_files(console_studio: ConsoleStudio) -> None:
    studio = console_studio
    browser = ConsoleHttp(studio.url)
    page = browser.get("/signin")
    assert page.status == 200 and 'name="csrf"' in page.text
    for answer in (page, browser.get("/healthz"), browser.get("/api/tables")):
        assert answer.headers["Content-Security-Policy"].startswith("default-src 'self'")
        assert answer.headers["X-Frame-Options"] == "DENY"
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        # A browser's POSTs carry the console's Origin (no-referrer would make it "null").
        assert answer.headers["Referrer-Policy"] == "same-origin"
    assert browser.get("/api/tables").headers["Cache-Control"] == "no-store"
    [signin_cookie] = page.headers.get_all("Set-Cookie")
    assert signin_cookie.startswith("livetable_signin=")
    for attribute in ("HttpOnly", "Path=/", "SameSite=Strict"):
        assert attribute in signin_cookie, signin_cookie
    assert "Secure" not in signin_cookie, "plain HTTP here (see test_tls)"

    form = browser.request(
        "POST",
        "/signin",
        body=f"username=alice&password={studio.passwords['alice']}&csrf=forged".encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert form.status == 403 and "livetable_session" not in browser.cookies, form.text
    cross_site = ConsoleHttp(studio.url, origin="http://evil.example")
    assert cross_site.sign_in("alice", studio.passwords["alice"]).status == 403

    answer = browser.sign_in("alice", studio.passwords["alice"])
    session_cookie = next(
        c for c in answer.headers.get_all("Set-Cookie") if c.startswith("livetable_session=")
    )
    for attribute in ("HttpOnly", "Path=/", "SameSite=Strict"):
        assert attribute in session_cookie, session_cookie
    assert "livetable_signin" not in browser.cookies, "the pre-session cookie is spent"
    index = browser.get("/")
    assert index.status == 200 and index.headers["Content-Type"].startswith("text/html")
    assert browser.get("/signin").status == 303, "signed in already"
    assert ConsoleHttp(studio.url).get("/static/index.html").status == 200, "no session needed"
    for escape in ("/static/../server.py", "/static/%2e%2e/server.py"):
        assert browser.get(escape).status in (403, 404), escape


def test_a_rounds_history_and_the_faces_still_possible(console_studio: ConsoleStudio) -> None:
    studio = console_studio
    viewer = signed_in(studio, "viewer")
    # Complete once the console's connection has caught up the table's events (just after
    # the sign-in it may not have yet: then it says so).
    faces = wait_until(
        lambda: (f := viewer.get("/api/tables/t1/faces").json())["complete"] and f,
        TIMEOUT_S,
        "t1's shoe seen from its start",
    )
    assert faces == {"possible": list(FACES), "complete": True}, faces

    studio.play("t1", 1)

    def settled() -> dict[str, Any] | None:
        done = [e for e in studio.events("t1") if e["type"] == "round_settled"]
        return done[-1] if done else None

    result = wait_until(settled, TIMEOUT_S, "t1's round settled")
    round_id = result["data"]["round_id"]
    # The console's own connection may not have caught up the settlement yet (a loaded
    # machine): the history grows until it has it.
    answer = wait_until(
        lambda: (a := viewer.get(f"/api/tables/t1/rounds/{round_id}")).status == 200
        and a.json()["events"][-1]["seq"] >= result["seq"]
        and a,
        TIMEOUT_S,
        "the round's history up to its settlement",
    ).json()
    events = answer["events"]
    assert (answer["table"], answer["round_id"]) == ("t1", round_id)
    assert events[0]["type"] == "round_opened" and events[-1] == result
    published = [e for e in studio.events("t1") if events[0]["seq"] <= e["seq"] <= result["seq"]]
    assert events == published, "every event of the round, as published"
    dealt = [e["data"]["card"] for e in events if e["type"] == "card_dealt"]
    assert 4 <= len(dealt) <= 6

    assert viewer.get(f"/api/tables/t1/rounds/{round_id + 5}").status == 404
    assert viewer.get("/api/tables/t9/rounds/1").status == 404
    assert viewer.get("/api/tables/t1/rounds/x").status in (400, 404)

    page = viewer.get(f"/history?table=t1&round={round_id}")
    assert page.status == 200 and page.headers["Content-Type"].startswith("text/html")
    if "history-events" in page.text:  # rendered here, not by the front end's page
        rows = re.findall(r"<tr><td>(\d+)</td>", page.text)
        assert [int(seq) for seq in rows] == [e["seq"] for e in events]

    faces = viewer.get("/api/tables/t1/faces").json()
    assert faces["complete"] is True and len(faces["possible"]) == 52, "one round exhausts none"


def test_an_idle_session_ends_and_its_broker_connection_closes(
    console_studio_with: Callable[..., ConsoleStudio],
) -> None:
    studio = console_studio_with(idle_timeout_s=10)
    alice = signed_in(studio, "alice")
    assert alice.get("/api/session").json()["idle_timeout_s"] == 10
    assert studio.console is not None
    # No request meanwhile: the console's own log says when it ended the session.
    wait_until(
        lambda: "a session ended after 10 s idle" in studio.console.log(),  # type: ignore[union-attr]
        TIMEOUT_S,
        "the idle session ended",
    )
    assert "alice: the last session ended" in studio.console.log()
    assert alice.get("/api/session").status == 401
    assert alice.act("t1", "pause", reason="too late").status == 401
    again = signed_in(studio, "alice")
    assert again.get("/api/session").json()["account"] == "alice"


def test_a_silent_table_in_a_round_goes_stale_and_comes_back(
    console_studio_with: Callable[..., ConsoleStudio],
) -> None:
    studio = console_studio_with(stale_after_s=2)
    alice = signed_in(studio, "alice")
    stream = alice.stream()
    try:
        studio.hold_dealer("t1")
        studio.play("t1", 1)
        studio.wait_state("t1", lambda s, _f: s["phase"] == "DEALING", "dealing, no card drawn")
        seen: list[tuple[str, Any]] = []
        stale = wait_for_item(
            stream.events,
            lambda e: e[0] == "tile" and e[1]["table"] == "t1" and e[1]["status"] == "stale",
            TIMEOUT_S,
            "t1 stale",
            taken=seen,
        )[1]
        assert stale["age_s"] >= 2 and stale["state"]["phase"] == "DEALING"
        assert alice.tables()["t1"]["status"] == "stale"
        studio.hold_dealer("t1", away=False)
        wait_for_item(
            stream.events,
            lambda e: e[0] == "tile" and e[1]["table"] == "t1" and e[1]["status"] == "running",
            TIMEOUT_S,
            "t1 running again",
        )
    finally:
        stream.close()


def test_sigterm_ends_open_streams_and_stops_cleanly(console_studio: ConsoleStudio) -> None:
    studio = console_studio
    streams = [signed_in(studio, name).stream() for name in ("alice", "viewer")]
    try:
        for stream in streams:
            wait_for_item(stream.events, lambda e: e[0] == "link", TIMEOUT_S, "the link")
        assert studio.console is not None
        assert studio.console.stop() == 0, studio.console.log()[-2000:]
        for stream in streams:
            assert stream.ended.wait(TIMEOUT_S), "the stream ended with the console"
    finally:
        for stream in streams:
            stream.close()
    log = studio.console.log()
    assert "stopping the console" in log
    # Each account's broker connection was closed with a DISCONNECT, not dropped.
    broker_log = studio.broker.log()
    for name in ("alice", "viewer"):
        assert f"Client {name} disconnected." in broker_log, broker_log[-2000:]
    assert "alice: the last session ended" not in log, "closed at the stop, not as idle"
