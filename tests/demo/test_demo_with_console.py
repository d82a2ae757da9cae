"""``livetable demo --console --supervisor manual``: the demo serves the supervisors' console
against its own broker, and its simulated supervisor stands aside, so that a person resolves
each pause there. The test is that person: it reads the console's address off the demo's
output, signs in under a name of its own, finds the table paused, sees that nobody resolves
it, and resolves it through the console."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.console import ConsoleHttp
from tests.support.wait import wait_until

LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]
REPO_ROOT = Path(__file__).resolve().parents[2]
CONSOLE_LINE = re.compile(r"the supervisors' console at (http://127\.0\.0\.1:\d+/) : sign in")
FELT_LINE = re.compile(
    r"demo paused \(misread\), for a supervisor at the console: .*"
    r"the card on the felt is (\S+)"
)


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_the_demo_serves_the_console_and_leaves_its_pauses_to_a_person(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    out = tmp_path / "demo.out"
    with open(out, "wb") as output:
        process = subprocess.Popen(
            [
                *LIVETABLE,
                "demo",
                "--console",
                "--supervisor",
                "manual",
                "--plain",
                "--rounds",
                "1",
                # Every round card misread: the first pause comes in the first round. A bot
                # that resolved it would do so at once.
                "--misread-rate",
                "1",
                "--resolve-delay-s",
                "0",
                "--mistake-rate",
                "0",
                "--pace-s",
                "0.01",
                "--betting-s",
                "0.3",
                "--dealer-idle-s",
                "600",
            ],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=REPO_ROOT,
            # faulthandler: SIGABRT dumps every thread's stack into the output (see below).
            env={**os.environ, "TMPDIR": str(temporary), "PYTHONFAULTHANDLER": "1"},
            # Ctrl-C reaches the demo as from a terminal: a test run started as a background
            # job has SIGINT ignored, and its children inherit that (the demo then played
            # on, its main thread in its wait loop a minute after the interrupt).
            preexec_fn=_interruptible,
        )
    try:

        def said(pattern: re.Pattern[str]) -> re.Match[str] | None:
            text = out.read_text()
            assert process.poll() is None, text[-3000:]
            return pattern.search(text)

        url = wait_until(lambda: said(CONSOLE_LINE), 60, "the console's address")[1]
        browser = ConsoleHttp(url.rstrip("/"))  # a browser's Origin has no path
        page = browser.get("/")
        assert page.status == 303 and page.headers["Location"] == "/signin", page.status
        signin = browser.get("/signin")
        assert signin.status == 200 and 'data-testid="signin-form"' in signin.text
        # The supervisor stood aside, at the moment it would have resolved the pause: it
        # said what the person needs, the card the dealer laid on the felt.
        card = wait_until(lambda: said(FELT_LINE), 90, "the first pause left to a person")[1]
        wait_until(lambda: "demo is online" in out.read_text(), 30, "the table online")
        assert browser.sign_in("floor", "any password").status == 303
        assert browser.get("/api/session").json()["role"] == "supervisor"
        tile = wait_until(
            lambda: (t := browser.tables().get("demo")) and t["status"] == "paused" and t,
            30,
            "the console showing the table paused",
        )
        pause = tile["state"]["pause"]
        assert pause["reason"] == "misread", pause
        # Nobody resolved it: the pause the console shows is the first one, still there.
        events = [line for line in out.read_text().splitlines() if "table_resumed" in line]
        assert events == [], events
        answer = browser.act("demo", "resume", resolution="enter_card", card=card)
        assert answer.status == 200 and answer.json()["ok"], answer.text
        wait_until(
            lambda: re.search(
                r"table_resumed +misread resolved by floor: enter_card", out.read_text()
            ),
            30,
            "the table resumed by the person at the console",
        )
    finally:
        stopping = time.monotonic()
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        killed = False
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            # Where it hangs: every thread's stack, written by faulthandler as it aborts.
            killed = True
            process.send_signal(signal.SIGABRT)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    # Once, in a full run on a loaded machine, the work folder was left with nothing said
    # after the interrupt: say how the demo ended, to tell a slow stop from a lost signal.
    how = (
        f"{'killed after' if killed else 'exit ' + str(process.returncode) + ' in'} "
        f"{time.monotonic() - stopping:.1f} s after the interrupt"
    )
    text = out.read_text()
    stacks = text[text.find("Fatal Python error") :] if "Fatal Python error" in text else ""
    assert not list(temporary.glob("livetable-demo-*")), (how, text[-2000:], stacks[:6000])
