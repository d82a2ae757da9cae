"""The console attacked over real HTTP (``console_studio``: the real console, daemons and a
locked-down mosquitto): a guesser who keeps an account's sign-in delay at its cap, a sign-in
over a live session, two sessions of one account, and a wall left open with nobody at it.
"""

from __future__ import annotations

import http.client
import re
import socket
import ssl
import subprocess
import sys
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trustme

from controller.console.sessions import device_cookie_name
from tests.support.broker import free_port
from tests.support.console import ConsoleHttp, ConsoleProcess, ConsoleStudio, HttpAnswer
from tests.support.daemon import REPO_ROOT
from tests.support.wait import wait_until

TIMEOUT_S = 30.0
_CSRF_FIELD = re.compile(r'name="csrf" value="([^"]+)"')


def signed_in(studio: ConsoleStudio, name: str) -> ConsoleHttp:
    browser = ConsoleHttp(studio.url)
    answer = browser.sign_in(name, studio.passwords[name])
    assert answer.status == 303, (answer.status, answer.text)
    wait_until(lambda: browser.tables().keys() == set(studio.tables), TIMEOUT_S, "every tile")
    return browser


def post_sign_in(browser: ConsoleHttp, name: str, password: str) -> HttpAnswer:
    """The sign-in form POSTed by ``browser`` whatever its session: the form's token from a
    fresh sign-in page (a browser with a session is sent on from /signin)."""
    fresh = ConsoleHttp(browser.url)
    page = fresh.get("/signin")
    found = _CSRF_FIELD.search(page.text)
    assert found is not None, page.text[:300]
    browser.cookies["livetable_signin"] = fresh.cookies["livetable_signin"]
    form = urllib.parse.urlencode({"username": name, "password": password, "csrf": found[1]})
    answer = browser.request(
        "POST",
        "/signin",
        body=form.encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    if answer.status == 303:
        browser.csrf = browser.get("/api/session").json()["csrf"]
    return answer


def test_a_guesser_at_the_cap_never_locks_out_a_browser_that_signed_in_before(
    console_studio: ConsoleStudio,
) -> None:
    studio = console_studio
    password = studio.passwords["alice"]
    alice = signed_in(studio, "alice")
    device = device_cookie_name("alice")
    assert device in alice.cookies, "a successful sign-in marks the browser for the name"
    assert alice.post_json("/signout", {}).status == 200

    bob = signed_in(studio, "bob")
    guesser = ConsoleHttp(studio.url)
    # Five wrong guesses, each as soon as the name's delay lets it: 16 s to wait now.
    for guess in range(5):
        answer = wait_until(
            lambda guess=guess: (
                (a := guesser.sign_in("alice", f"guess-{guess}")).status != 429 and a
            ),
            TIMEOUT_S,
            "the name's delay over",
        )
        assert answer.status == 401, answer.text
    # The name's delay now holds the guesser, even with the right password...
    assert guesser.sign_in("alice", password).status == 429
    # ...and a made-up device cookie, or another account's, changes nothing.
    guesser.cookies[device] = "made-up.0123"
    assert guesser.sign_in("alice", password).status == 429
    guesser.cookies[device] = bob.cookies[device_cookie_name("bob")]
    assert guesser.sign_in("alice", password).status == 429

    # Alice's own browser is not held by the guesser's failures.
    answer = alice.sign_in("alice", password)
    assert answer.status == 303, answer.text
    assert alice.get("/api/session").json()["account"] == "alice"
    # Her success leaves the guesser's delay where it was.
    assert guesser.sign_in("alice", password).status == 429
    # Her browser's own failures hold it in turn (a stolen cookie buys no free guesses).
    assert alice.post_json("/signout", {}).status == 200
    assert alice.sign_in("alice", "typo").status == 401
    assert alice.sign_in("alice", password).status == 429


def test_a_sign_in_over_a_live_session_ends_that_session(console_studio: ConsoleStudio) -> None:
    studio = console_studio
    browser = signed_in(studio, "alice")
    first = browser.cookies["livetable_session"]
    answer = post_sign_in(browser, "bob", studio.passwords["bob"])
    assert answer.status == 303, answer.text
    assert browser.cookies["livetable_session"] != first, "a new session id for the new sign-in"
    assert browser.get("/api/session").json()["account"] == "bob"
    old = ConsoleHttp(studio.url)
    old.cookies["livetable_session"] = first
    assert old.get("/api/session").status == 401, "the old session must end with the sign-in"
    assert studio.console is not None
    wait_until(
        lambda: "alice: the last session ended" in studio.console.log(),  # type: ignore[union-attr]
        TIMEOUT_S,
        "alice's broker connection closed",
    )
    # The same account again: a new id too, the old one gone, the account still connected.
    second = browser.cookies["livetable_session"]
    assert post_sign_in(browser, "bob", studio.passwords["bob"]).status == 303
    assert browser.cookies["livetable_session"] != second
    old.cookies["livetable_session"] = second
    assert old.get("/api/session").status == 401
    # As a person would: on the table's tile, once bob's connection has shown it.
    wait_until(lambda: "t1" in browser.tables(), TIMEOUT_S, "t1 on bob's wall")
    acted = browser.act("t1", "pause", reason="after signing in again").json()
    assert acted["ok"], acted
    assert browser.act("t1", "resume").json()["ok"]


def test_two_sessions_of_one_account_share_its_connection(console_studio: ConsoleStudio) -> None:
    studio = console_studio
    desk = signed_in(studio, "alice")
    tablet = signed_in(studio, "alice")
    # The account is connected: a second sign-in is checked against its password all the same.
    assert ConsoleHttp(studio.url).sign_in("alice", "not-hers").status == 401
    assert desk.post_json("/signout", {}).status == 200
    assert desk.get("/api/session").status == 401
    assert tablet.get("/api/session").json()["account"] == "alice"
    assert tablet.act("t2", "pause", reason="from the tablet").json()["ok"]
    assert tablet.act("t2", "resume").json()["ok"]
    rows = studio.tables["t2"].journal_rows("SupervisorCommanded")
    assert [(row["by"], row["command"]) for row in rows[-2:]] == [
        ("alice", "pause"),
        ("alice", "resume"),
    ]
    assert studio.console is not None
    assert "alice: the last session ended" not in studio.console.log()


def test_an_open_stream_alone_does_not_keep_a_session_alive(
    console_studio_with: Callable[..., ConsoleStudio],
) -> None:
    studio = console_studio_with(idle_timeout_s=10)
    alice = signed_in(studio, "alice")
    stream = alice.stream()
    try:
        assert stream.status == 200
        # Tiles keep coming (the tables publish), and yet the session ends when idle.
        studio.play("t1", 3)
        assert stream.ended.wait(TIMEOUT_S * 2), "the stream of an idle session must end"
    finally:
        stream.close()
    assert alice.get("/api/session").status == 401
    again = alice.stream()
    try:
        assert again.status == 401
    finally:
        again.close()


def _connect(studio: ConsoleStudio) -> socket.socket:
    host, port = urllib.parse.urlsplit(studio.url).netloc.split(":")
    # Longer than the console may hold a silent connection: the test waits for its close.
    return socket.create_connection((host, int(port)), timeout=TIMEOUT_S * 2)


def _answer_or_close(connection: socket.socket) -> bytes:
    """What the console sends before it closes the connection (b"" for nothing)."""
    received = b""
    try:
        while chunk := connection.recv(4096):
            received += chunk
    except TimeoutError:
        raise AssertionError(f"the console held the connection open: {received[:200]!r}") from None
    except ConnectionResetError:
        pass
    return received


def test_silent_connections_and_slow_bodies_are_not_held_for_ever(
    console_studio: ConsoleStudio,
) -> None:
    studio = console_studio
    # Opened together, then awaited: each is closed within the console's limits.
    # A connection that never sends a request (each one holds a file descriptor of the
    # console's: enough of them and nobody can sign in).
    silent = _connect(studio)
    # Half a request's headers, never finished.
    slow_headers = _connect(studio)
    slow_headers.sendall(b"GET /signin HTTP/1.1\r\nHost: x\r\n")
    # A sign-in whose body never comes in full: answered 408, not awaited for ever.
    slow_body = _connect(studio)
    slow_body.sendall(
        b"POST /signin HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n"
        b"username=alice&password="
    )
    with silent, slow_headers, slow_body:
        answer = _answer_or_close(slow_body)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert _answer_or_close(silent) == b""
        assert _answer_or_close(slow_headers) == b""
    # And the console still serves.
    assert ConsoleHttp(studio.url).get("/healthz").text == "ok"


def test_a_table_whose_journal_is_replaced_shows_only_its_new_series(
    console_studio: ConsoleStudio,
) -> None:
    studio = console_studio
    studio.play("t2", 1)
    studio.wait_state(
        "t2",
        lambda s, _f: s["phase"] == "SHOE_READY" and s["shoe"]["round_number"] == 1,
        "a round played",
    )
    alice = signed_in(studio, "alice")
    old = alice.tables()["t2"]["state"]
    assert alice.get("/api/tables/t2/rounds/1").status == 200
    # The table's PC gets a new journal: another epoch, its events from 1 again, no shoe.
    table = studio.tables["t2"]
    table.daemon.stop()
    for path in table.journal_path.parent.glob(table.journal_path.name + "*"):
        path.unlink()
    table.daemon.start()
    # While the daemon restarts, its tile may have no state yet: nothing to compare.
    tile = wait_until(
        lambda: (
            (t := alice.tables()["t2"])["state"] is not None
            and t["state"]["epoch"] != old["epoch"]
            and t["availability"] == "online"
            and t
        ),
        TIMEOUT_S,
        "t2 under its new journal",
    )
    assert tile["state"]["phase"] == "AWAITING_SHUFFLE", tile["state"]
    new_epoch_seqs = [event["seq"] for event in tile["recent"]]
    assert new_epoch_seqs == list(range(1, len(new_epoch_seqs) + 1)), new_epoch_seqs
    assert all(event["type"] != "round_settled" for event in tile["recent"])
    # The old journal's round is not this journal's; nothing of the old shoe is counted.
    assert alice.get("/api/tables/t2/rounds/1").status == 404
    faces = alice.get("/api/tables/t2/faces").json()
    assert len(faces["possible"]) == 52 and faces["complete"] is False, faces


def test_under_tls_every_cookie_of_a_sign_in_is_secure(
    console_studio: ConsoleStudio, tmp_path: Path
) -> None:
    studio = console_studio
    ca = trustme.CA()
    served = ca.issue_cert("127.0.0.1")
    certificate, key = tmp_path / "console.crt", tmp_path / "console.key"
    served.cert_chain_pems[0].write_to_path(certificate)
    served.private_key_pem.write_to_path(key)
    port = free_port()
    config = tmp_path / "console-tls.toml"
    config.write_text(
        f'[console]\nlisten = "127.0.0.1:{port}"\ncertificate = "{certificate}"\n'
        f'key = "{key}"\n[broker]\nhost = "{studio.broker.host}"\nport = {studio.broker.port}\n',
        encoding="utf-8",
    )
    console = ConsoleProcess(config, tmp_path / "console-tls.log", port)
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    origin = f"https://127.0.0.1:{port}"

    def ask(method: str, path: str, **options: Any) -> http.client.HTTPResponse:
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=trusted, timeout=10)
        connection.request(method, path, **options)
        return connection.getresponse()

    with open(console.log_path, "wb") as log:
        console.process = subprocess.Popen(
            [sys.executable, "-m", "controller.tools.cli", "console", "--config", str(config)],
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    try:

        def healthy() -> bool:
            assert console.alive(), console.log()
            try:
                return ask("GET", "/healthz").read() == b"ok"
            except OSError:
                return False

        wait_until(healthy, TIMEOUT_S, "the console answering over HTTPS")
        page = ask("GET", "/signin")
        signin_cookie = page.headers["Set-Cookie"].split(";", 1)[0]
        found = _CSRF_FIELD.search(page.read().decode())
        assert found is not None
        form = urllib.parse.urlencode(
            {"username": "alice", "password": studio.passwords["alice"], "csrf": found[1]}
        )
        answer = ask(
            "POST",
            "/signin",
            body=form.encode(),
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "Cookie": signin_cookie,
                "Origin": origin,
            },
        )
        assert answer.status == 303, answer.read()
        cookies = answer.headers.get_all("Set-Cookie") or []
        names = {cookie.split("=", 1)[0] for cookie in cookies}
        assert {"livetable_session", device_cookie_name("alice")} <= names, cookies
        for cookie in cookies:
            flags = {flag.strip().lower() for flag in cookie.split(";")[1:]}
            assert {"secure", "httponly", "samesite=strict", "path=/"} <= flags, cookie
    finally:
        assert console.stop() == 0, console.log()
