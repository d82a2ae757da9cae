"""``livetable demo`` runs the daemon with simulated devices and people around it, all over
MQTT: an independent client connects to the broker the demo prints (its embedded amqtt, or
a real mosquitto given with ``--broker``) and sees what any consumer would: availability,
the retained state and every round's events. The live view is read off a pseudo-terminal's
screen. With a camera, the cards the camera read are checked against the shoe's truth."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import termios
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from controller.client.api_client import Account, ApiClient
from controller.games.registry import GAME_IDS, game_spec
from controller.kernel.presentation import SIDES
from controller.tools.event_text import settled_summary
from tests.support.daemon import check_stream, gaps, unique_by_seq
from tests.support.wait import wait_until

LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]
REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO_ROOT / "tests" / "artifacts"
# Fast people, generous deadlines: a loaded machine must not turn a slow answer into a
# timeout (speed is not what these tests are about).
FAST = ["--pace-s", "0.01", "--betting-s", "0.3", "--decision-s", "60", "--dealer-idle-s", "60"]
RUN_TIMEOUT_S = 90.0
BROKER_LINE = re.compile(
    r"watch it with: mosquitto_sub -h (?P<host>\S+) -p (?P<port>\d+)"
    r"(?: -u (?P<user>\S+) -P (?P<password>\S+))?"
)


def child_env(tmp_path: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A demo child's environment: its temporary folders (``TMPDIR``) in the test's own, so
    that a demo stopped halfway leaves nothing in the machine's /tmp."""
    temporary = tmp_path / "tmp"
    temporary.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(temporary), **(extra or {})}


class Demo:
    """``livetable demo`` as a child process, its output in files."""

    def __init__(self, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.out_path = tmp_path / "demo.out"
        self.err_path = tmp_path / "demo.err"
        self.work = tmp_path / "work"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.process = subprocess.Popen(
                [*LIVETABLE, "demo", "--work-dir", str(self.work), *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=REPO_ROOT,
                env=child_env(tmp_path, env),
            )

    def broker(self) -> re.Match[str]:
        def found() -> re.Match[str] | None:
            text = self.err_path.read_text() + self.out_path.read_text()
            assert self.process.poll() is None or "watch it with" in text, text
            return BROKER_LINE.search(text)

        return wait_until(found, 30, "the demo printing its broker")

    def wait(self) -> int:
        try:
            return self.process.wait(RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.stop()
            raise

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out_path.read_text().splitlines()]


def watch_table(match: re.Match[str]) -> tuple[ApiClient, list[tuple[str, bytes]]]:
    """An independent client on the broker the demo printed, recording every message."""
    login = (match["user"], match["password"]) if match["user"] else None
    client = ApiClient(
        match["host"], int(match["port"]), "demo", Account("viewer", "test-viewer"), login=login
    )
    seen: list[tuple[str, bytes]] = []
    inner = client.client.on_message

    def tap(paho: Any, userdata: Any, message: Any) -> None:
        seen.append((message.topic, bytes(message.payload)))
        inner(paho, userdata, message)

    client.client.on_message = tap
    assert client.wait_connected(), f"the broker refused the test's client: {client.refused}"
    return client, seen


def play_and_watch(demo: Demo, game: str, rounds: int) -> tuple[list[dict[str, Any]], list]:
    """Connect to the demo's broker, catch up with ``events`` from 0 as a consumer does
    after subscribing, follow the table live until the demo ends; every event (unique, in
    seq order) and every raw message seen."""
    client, seen = watch_table(demo.broker())
    try:
        wait_until(lambda: client.state is not None, 30, "the retained state")
        caught_up: list[dict[str, Any]] = []
        since, more = 0, True
        while more:
            answer = client.request("events", since=since)
            assert answer["ok"], answer
            caught_up += answer["data"]["events"]
            more = answer["data"]["more"]
            since = caught_up[-1]["seq"] if caught_up else since
        assert demo.wait() == 0, demo.err_path.read_text()[-3000:]
        wait_until(lambda: client.availability == "offline", 10, "availability offline")
        events = unique_by_seq(caught_up + list(client.events))
    finally:
        client.close()
    assert gaps([event["seq"] for event in events]) == []
    kinds = Counter(event["type"] for event in events)
    assert kinds["round_settled"] == rounds, kinds
    assert check_stream(events, game) == rounds
    topics = Counter(topic.rsplit("/", 1)[-1] for topic, _ in seen)
    assert topics["state"] >= 1 and topics["availability"] >= 2, topics
    assert b"online" in [p for t, p in seen if t.endswith("/availability")], seen[:5]
    return events, seen


@pytest.mark.parametrize("game", GAME_IDS)
def test_demo_plays_every_game_over_its_embedded_broker(game: str, tmp_path: Path) -> None:
    demo = Demo(
        tmp_path,
        "--json",
        "--game",
        game,
        "--rounds",
        "3",
        "--misread-rate",
        "0.1",
        "--resolve-delay-s",
        "0.2",
        *FAST,
    )
    try:
        events, _seen = play_and_watch(demo, game, 3)
    finally:
        demo.stop()
    # What the demo printed: every MQTT message, one JSON object per line, topic + payload.
    printed = demo.json_lines()
    assert all(set(line) == {"payload", "topic"} for line in printed)
    printed_events = unique_by_seq(
        [line["payload"] for line in printed if line["topic"] == "livetable/demo/events"]
    )
    assert printed_events == events
    # The supervisor entered every card the shoe misread, as the dealer saw it.
    truth = [
        json.loads(line)
        for line in (demo.work / "demo" / "shoe-truth.jsonl").read_text().splitlines()
    ]
    misread = [record["card"] for record in truth if record["event"] == "misread"]
    entered = [
        e["data"].get("card")
        for e in events
        if e["type"] in ("card_dealt", "hole_card_read") and e["data"]["source"] == "supervisor"
    ]
    assert len(entered) == len(misread)
    assert [c for c in entered if c is not None] == [
        c for c, e in zip(misread, entered, strict=True) if e is not None
    ]
    # Every table's journal verifies after the demo.
    verify = subprocess.run(
        [*LIVETABLE, "journal", "verify", str(demo.work / "demo" / "demo.journal")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.parametrize("game", GAME_IDS)
def test_demo_against_a_real_mosquitto(
    game: str, tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    host, port = mqtt_broker
    demo = Demo(
        tmp_path,
        "--broker",
        f"mqtt://{host}:{port}",
        "--plain",
        "--game",
        game,
        "--rounds",
        "3",
        *FAST,
    )
    try:
        events, _seen = play_and_watch(demo, game, 3)
    finally:
        demo.stop()
    out = demo.out_path.read_text()
    assert "demo #" in out and "round_settled" in out, out[-2000:]
    # Each result is said in its game's own words (its hands, as its presentation names them).
    settled = [event["data"] for event in events if event["type"] == "round_settled"]
    assert len(settled) == 3
    for data in settled:
        assert settled_summary(data, game) in out, out[-2000:]
    if game_spec(game).presentation.shape == SIDES:
        hands = game_spec(game).presentation.hands
        assert all(f"{hand} " in settled_summary(data, game) for data in settled for hand in hands)
    assert "livetable demo: table demo: 3 round(s) settled, 0 voided" in out, out[-2000:]


def test_demo_with_two_tables_runs_two_daemons(tmp_path: Path) -> None:
    demo = Demo(tmp_path, "--tables", "2", "--rounds", "2", "--plain", *FAST)
    try:
        assert demo.wait() == 0, demo.err_path.read_text()[-3000:]
    finally:
        demo.stop()
    out = demo.out_path.read_text()
    assert "one `livetable run` process each" in out
    for table in ("demo1", "demo2"):
        assert f"livetable demo: table {table}: 2 round(s) settled" in out, out[-2000:]
        assert (demo.work / table / f"{table}.journal").is_file()


def test_demo_refuses_bad_flags(tmp_path: Path) -> None:
    for args in (["--rounds", "0"], ["--pace-s", "-1"], ["--misread-rate", "2"], ["--game", "x"]):
        done = subprocess.run(
            [*LIVETABLE, "demo", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=child_env(tmp_path),
        )
        assert done.returncode == 2, (args, done.stderr)
    done = subprocess.run(
        [*LIVETABLE, "demo", "--broker", "http://nowhere", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=child_env(tmp_path),
    )
    assert done.returncode == 2 and "argument --broker: must look like mqtt://" in done.stderr


def test_demo_refuses_a_work_folder_that_holds_an_earlier_table(tmp_path: Path) -> None:
    """A journal in the work folder belongs to a shoe that a simulator dealt and took with
    it; the demo says so instead of continuing that shoe with other cards."""
    work = tmp_path / "work"

    def demo(timeout_s: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*LIVETABLE, "demo", "--rounds", "1", "--plain", "--work-dir", str(work), *FAST],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env=child_env(tmp_path),
        )

    first = demo(120)
    assert first.returncode == 0, first.stderr[-3000:]
    journals = sorted(work.glob("demo/*.journal"))
    assert journals, sorted(str(path) for path in work.rglob("*"))
    before = {path: path.read_bytes() for path in journals}
    again = demo(60)
    assert again.returncode == 1, again.stdout[-2000:] + again.stderr[-2000:]
    (line,) = again.stderr.splitlines()
    assert line.startswith(f"livetable: error: --work-dir {work} already holds table demo"), line
    assert {path: path.read_bytes() for path in journals} == before


# -- the live view ----------------------------------------------------------------------------

SCREEN_COLUMNS, SCREEN_LINES = 120, 40
HAND = r"{}\s+((?:[2-9TJQKA][SHDC] )*[2-9TJQKA][SHDC])\s+\((\d)\)"


def test_the_live_view_shows_the_round_and_a_pause(tmp_path: Path) -> None:
    """On a terminal the demo draws its live view: the phase, both hands with their cards
    and totals, and, when the shoe misreads a card, the pause and its reason in red."""
    pyte = pytest.importorskip("pyte")
    screen = pyte.Screen(SCREEN_COLUMNS, SCREEN_LINES)
    stream = pyte.ByteStream(screen)
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SCREEN_LINES, SCREEN_COLUMNS, 0, 0))
    process = subprocess.Popen(
        [
            *LIVETABLE,
            "demo",
            "--rounds",
            "6",
            "--misread-rate",
            "0.4",
            "--mistake-rate",
            "0",
            "--resolve-delay-s",
            "3",
            "--pace-s",
            "0.05",
            "--betting-s",
            "0.3",
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=REPO_ROOT,
        env=child_env(tmp_path, {"TERM": "xterm-256color", "COLUMNS": "", "LINES": ""}),
        start_new_session=True,
    )
    os.close(slave)
    lock = threading.Lock()

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

    reader = threading.Thread(target=pump, name="pty-reader", daemon=True)
    reader.start()

    def paused_with_both_hands() -> str | None:
        with lock:
            text = "\n".join(line.rstrip() for line in screen.display)
        both = re.search(HAND.format("player"), text) and re.search(HAND.format("banker"), text)
        paused = re.search(r"phase\s+PAUSED", text) and "misread: a card could not be read" in text
        # The whole frame, not one caught half-drawn: its panel closed below the pause's needs.
        whole = "needs enter_card" in text and "╰" in text.split("needs enter_card", 1)[1]
        # The view's client applies a table's events once it has caught up with those
        # published before it first saw the table: the state can show the pause first.
        told = "table_paused: misread" in text
        return text if both and paused and whole and told else None

    try:
        text = wait_until(paused_with_both_hands, 60, "a pause for a misread with both hands dealt")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(5)
        os.close(master)
    shot = tmp_path / "demo-live-view.txt"
    shot.write_text(text + "\n", encoding="utf-8")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, ARTIFACTS / shot.name)
    assert "livetable demo" in text and "table demo · baccarat · online" in text, text
    assert re.search(r"shoe\s+shoe 1: \d+ drawn, \d+ left, round \d", text), text
    assert "needs enter_card for the unread card at" in text, text
    assert "last events" in text and "round_opened" in text, text
    # The pause is drawn in red: find the reason's first character's colour on the screen.
    row = next(y for y, line in enumerate(screen.display) if "misread: a card could" in line)
    column = screen.display[row].index("misread: a card could")
    assert screen.buffer[row][column].fg == "red", screen.buffer[row][column]


# -- with a camera ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def enrolled_deck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.camera.test_reader import enrolled_deck_file

    return enrolled_deck_file(tmp_path_factory)


def test_demo_with_a_camera_reads_the_cards_the_shoe_misreads(
    tmp_path: Path, enrolled_deck: Path
) -> None:
    demo = Demo(
        tmp_path,
        "--json",
        "--camera",
        "--deck",
        str(enrolled_deck),
        "--rounds",
        "4",
        "--misread-rate",
        "0.3",
        "--seed",
        "5",
        "--resolve-delay-s",
        "0.2",
        *FAST,
    )
    try:
        events, _seen = play_and_watch(demo, "baccarat", 4)
    finally:
        demo.stop()
    truth = [
        json.loads(line)
        for line in (demo.work / "demo" / "shoe-truth.jsonl").read_text().splitlines()
    ]
    misread = [record["card"] for record in truth if record["event"] == "misread"]
    assert misread, "the shoe misread nothing: the camera was never asked"
    # Each misread card came into the round from the camera or, where it abstained, from
    # the supervisor; never a wrong card.
    by = [
        (e["data"]["source"], e["data"]["card"])
        for e in events
        if e["type"] == "card_dealt" and e["data"]["source"] in ("camera", "supervisor")
    ]
    assert [card for _source, card in by] == misread
    assert [source for source, _card in by].count("camera") >= 1, by
    # A picture of every card dealt, its row right after the card's, and of the table as
    # each round settled; none of the burn cards (drawn before the first round).
    from controller.service.journal import Journal
    from controller.service.pictures import check_pictures, picture_rows, pictures_dir

    journal_path = demo.work / "demo" / "demo.journal"
    with Journal(journal_path, read_only=True) as journal:
        rows = {row.seq: row for row in journal.entries()}
        pictures = picture_rows(journal)
        check = check_pictures(journal, pictures_dir(journal_path))
    cards = [p for p in pictures if p.fields["view"] == "card"]
    dealt = [e for e in events if e["type"] == "card_dealt"]
    assert len(cards) == len(dealt) and check.problems == () and check.kept == len(pictures)
    assert [p.fields["position"] for p in cards] == [e["data"]["position"] for e in dealt]
    for picture in pictures:
        row = picture.fields["card_row"]
        between = range(row + 1, picture.seq)
        assert all(rows[seq].kind == "CardPictured" for seq in between), picture.seq
    settled = [e for e in events if e["type"] == "round_settled"]
    assert sum(p.fields["view"] == "settled" for p in pictures) == len(settled)
    first_round = min(p.fields["card_row"] for p in cards)
    burned = [seq for seq, row in rows.items() if row.kind == "CardDrawn" and seq < first_round]
    assert burned and not any(p.fields["card_row"] in burned for p in pictures)


def test_demo_with_a_camera_uses_the_cached_deck(tmp_path: Path, enrolled_deck: Path) -> None:
    from controller.tools.demo import demo_deck_path
    from vision.model import DEFAULT_MODEL, CornerClassifier

    cache = tmp_path / "cache"
    cached = demo_deck_path("kde-standard", CornerClassifier(DEFAULT_MODEL).digest)
    cached = cache / cached.relative_to(cached.parents[1])
    cached.parent.mkdir(parents=True)
    shutil.copy(enrolled_deck, cached)
    demo = Demo(
        tmp_path,
        "--camera",
        "--plain",
        "--rounds",
        "1",
        "--misread-rate",
        "0",
        *FAST,
        env={"LIVETABLE_CACHE_DIR": str(cache)},
    )
    try:
        assert demo.wait() == 0, demo.err_path.read_text()[-3000:]
    finally:
        demo.stop()
    out = demo.out_path.read_text()
    assert f"using the enrolled kde-standard deck cached in {cached}" in out
    assert "1 round(s) settled" in out and "the camera read 0 card(s)" in out, out[-2000:]


def test_the_demo_without_a_camera_loads_no_opencv(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom controller.tools.cli import main\n"
        f"status = main(['demo', '--json', '--rounds', '1', '--pace-s', '0.01', '--betting-s',"
        f" '0.2', '--work-dir', {str(tmp_path / 'w')!r}])\n"
        "print('cv2' in sys.modules, 'vision.recognise' in sys.modules, status, file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=child_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "False False 0"


@pytest.mark.slow
def test_without_a_deck_the_demo_enrols_one_from_the_simulated_camera(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The uncached path of ``demo --camera``: pictures through the collector of ``camera
    enrol``, enrolled, cached, then reused. One picture per set-up (four of each card, the
    least the deck's calibration takes) instead of five keeps it to seconds."""
    import io

    import controller.tools.demo_deck as demo
    from controller.kernel.cards import parse_card
    from simulators.camera import SimulatedCamera
    from vision.deck import EnrolledDeck
    from vision.recognise import Recogniser

    monkeypatch.setenv("LIVETABLE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(demo, "DEMO_DECK_PICTURES_PER_SETUP", 1)
    out = io.StringIO()
    path = demo.demo_deck("kde-standard", out)
    assert path.is_file() and path.is_relative_to(tmp_path)
    assert "pictures taken by the simulated table camera" in out.getvalue()
    deck = EnrolledDeck.load(path)
    assert deck.info["pictures"] == 52 * len(demo.DEMO_DECK_SETUPS)
    again = io.StringIO()
    assert demo.demo_deck("kde-standard", again) == path
    assert "using the enrolled kde-standard deck cached" in again.getvalue()
    # The deck reads the felt of a camera set-up it was not enrolled from; never wrongly.
    camera = SimulatedCamera("baccarat", "kde-standard", seed=3)
    laid = {"player.card1": parse_card("QH"), "banker.card1": parse_card("7C")}
    recogniser = Recogniser(deck=deck, slot_centred=True)
    answers = {}
    for slot, card in laid.items():
        camera.deal(slot, card)
        frames = [camera.region(slot, camera.next_frame()).image for _ in range(3)]
        answers[slot] = recogniser.recognise_frames(frames).card
    assert all(answers[slot] in (card, None) for slot, card in laid.items()), answers
    assert any(answers[slot] == card for slot, card in laid.items()), answers
