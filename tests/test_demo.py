"""The demo runs a whole simulated table end to end: shoe simulator on a real pty, the
production shoe driver, the journal, the state machine and the simulated people."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from itertools import cycle
from pathlib import Path

import pytest

from controller.games.cards import parse_card
from controller.games.registry import GAME_IDS
from drivers.shoe.sessions import PROTOCOL_NAMES


def run_demo(*args: str, tmp_path: Path) -> list[dict]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "demo",
            "--json",
            "--pace-s",
            "0.01",
            "--betting-s",
            "0.2",
            # Generous deadlines: a loaded CI machine must not turn a slow answer into a
            # timeout (speed is not what this test is about).
            "--decision-s",
            "60",
            "--journal",
            str(tmp_path / "demo.journal"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


# Every game, each with a shoe protocol in turn, so every protocol plays too.
@pytest.mark.parametrize(("game", "protocol"), list(zip(GAME_IDS, cycle(PROTOCOL_NAMES))))
def test_demo_plays_rounds_of_every_game(game: str, protocol: str, tmp_path: Path) -> None:
    effects = run_demo(
        "--game",
        game,
        "--protocol",
        protocol,
        "--rounds",
        "3",
        "--dealer-idle-s",
        "60",
        tmp_path=tmp_path,
    )
    events = Counter(e["name"] for e in effects if e["effect"] == "PublishEvent")
    assert events["round_settled"] == 3
    assert events["shoe_started"] == 1
    assert events["burn_completed"] == 1
    assert not [e for e in effects if e["effect"] == "EventRejected"]
    assert not [e for e in effects if e["effect"] == "PublishState" and e["state"]["paused"]]
    dealt = [e["payload"] for e in effects if e.get("name") == "card_dealt"]
    for card in dealt:
        if card["face_down"]:
            assert "card" not in card  # the hole card is not published when it is dealt
        else:
            parse_card(card["card"])
    # Every round was journaled: the journal verifies afterwards.
    verify = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "journal",
            "verify",
            str(tmp_path / "demo.journal"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_demo_survives_a_noisy_serial_line(tmp_path: Path) -> None:
    effects = run_demo("--rounds", "4", "--line-noise", "0.05", "--seed", "7", tmp_path=tmp_path)
    events = Counter(e["name"] for e in effects if e["effect"] == "PublishEvent")
    assert events["round_settled"] + events["round_voided"] == 4
    assert events["round_settled"] >= 1


# -- with a camera -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def enrolled_deck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.camera.test_reader import enrolled_deck_file

    return enrolled_deck_file(tmp_path_factory)


def run_camera_demo(
    deck: Path, rounds: int, misread_rate: float, seed: int, *args: str, tmp_path: Path
) -> tuple[list[dict], list[dict]]:
    """``demo --camera`` with ``deck``: the camera's answers and the table's effects, once
    every round has ended (settled or voided)."""
    lines = run_demo(
        "--camera",
        "--deck",
        str(deck),
        "--rounds",
        str(rounds),
        "--misread-rate",
        str(misread_rate),
        "--seed",
        str(seed),
        # A card awaited longer than this pauses the table: generous, for a loaded machine.
        "--dealer-idle-s",
        "60",
        *args,
        tmp_path=tmp_path,
    )
    answers = [line["camera_answer"] for line in lines if "camera_answer" in line]
    effects = [line for line in lines if "effect" in line]
    events = Counter(e["name"] for e in effects if e["effect"] == "PublishEvent")
    assert events["round_settled"] + events["round_voided"] == rounds
    return answers, effects


def test_demo_with_a_camera_reads_the_cards_the_shoe_misreads(
    tmp_path: Path, enrolled_deck: Path
) -> None:
    answers, effects = run_camera_demo(enrolled_deck, 4, 0.3, 5, tmp_path=tmp_path)
    assert answers, "the shoe misread nothing: the camera was never asked"
    # Never a wrong card; each card read came into the round from the camera.
    assert not [a for a in answers if a["correct"] is False], answers
    read = [a for a in answers if a["read"]]
    assert read, answers
    from_camera = [
        e["payload"]
        for e in effects
        if e.get("name") == "card_dealt" and e["payload"]["source"] == "camera"
    ]
    assert [d["card"] for d in from_camera] == [a["card"] for a in read if a["reason"] == "misread"]
    for answer in answers:
        position, number = answer["slot"].rsplit(".card", 1)
        assert position in ("player", "banker") and 1 <= int(number) <= 3


def test_demo_with_a_camera_at_a_blackjack_table(tmp_path: Path, enrolled_deck: Path) -> None:
    answers, _effects = run_camera_demo(
        enrolled_deck, 6, 0.4, 2, "--game", "blackjack-boundless", tmp_path=tmp_path
    )
    assert [a for a in answers if a["read"]], answers
    assert not [a for a in answers if a["correct"] is False], answers  # never a wrong card
    for answer in answers:
        hand, number = answer["slot"].rsplit(".card", 1)
        assert hand in ("player", "dealer") and 1 <= int(number) <= 12
        # The camera's lines never carry the hole card's face (the table publishes it).
        assert ("card" in answer) == (answer["reason"] != "hole_reveal")


def test_demo_with_a_camera_uses_the_cached_deck(tmp_path: Path, enrolled_deck: Path) -> None:
    from controller.demo import demo_deck_path
    from vision.model import DEFAULT_MODEL, CornerClassifier

    cache = tmp_path / "cache"
    env = {**os.environ, "LIVETABLE_CACHE_DIR": str(cache)}
    cached = demo_deck_path("kde-standard", CornerClassifier(DEFAULT_MODEL).digest)
    cached = cache / cached.relative_to(cached.parents[1])
    cached.parent.mkdir(parents=True)
    shutil.copy(enrolled_deck, cached)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "demo",
            "--camera",
            "--rounds",
            "1",
            "--pace-s",
            "0.01",
            "--betting-s",
            "0.2",
            "--misread-rate",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert f"using the enrolled kde-standard deck cached in {cached}" in done.stdout
    assert "the camera read 0 card(s), abstained on 0, read 0 wrong" in done.stdout


def test_the_demo_without_a_camera_loads_no_opencv(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom controller.cli import main\n"
        f"status = main(['demo', '--json', '--rounds', '1', '--pace-s', '0.01', '--betting-s',"
        f" '0.2', '--journal', {str(tmp_path / 'j')!r}])\n"
        "print('cv2' in sys.modules, 'vision.recognise' in sys.modules, status, file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
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

    import controller.demo as demo
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
