"""The camera reader on real pixels: the camera simulator's frames, a real enrolled deck,
the real recogniser. It answers with the card, or abstains (and says why) on every
failure; it never logs the face of the hole card."""

from __future__ import annotations

import fcntl
import logging
import os
import queue
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from controller.kernel.cards import ALL_FACES, Card, parse_card
from controller.kernel.errors import ConfigurationError
from controller.table.effects import AskCamera
from controller.table.events import CameraRead
from drivers.camera import CameraCapture, Crop, Frame
from drivers.camera_reader import CameraAnswer, CameraReader, ReaderConfig, load_recogniser
from simulators.camera import SimulatedCamera
from tests.conftest import REPO_ROOT

DESIGN = "kde-standard"
# A small enrolment (4 pictures per card) keeps the fixture to seconds and still reads the
# simulator's cards. Its own cross-fitted calibration is too thin to trust (with 208 pictures
# it found no wrong answer and set the 0.9 floor, which let a 6D read as 4D at 0.965 through
# in the demo), so the test deck is given a stricter threshold: more abstentions, never a
# laxer bound. The demo's and a studio's decks are enrolled from about 20 pictures per card
# and calibrated on them (docs/vision.md).
PICTURES_PER_CARD = 4
TEST_DECK_THRESHOLD = 0.99
ENROL_SEED = 11


def enrolled_deck_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An enrolled kde-standard deck, made once per test run (shared by the xdist workers
    through a file lock) and keyed by the vision model, which may be retrained."""
    from vision.enrol import enrol
    from vision.model import DEFAULT_MODEL, CornerClassifier
    from vision.synth import render_scene

    classifier = CornerClassifier(DEFAULT_MODEL)
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    name = (
        f"reader-deck-{DESIGN}-{PICTURES_PER_CARD}-{TEST_DECK_THRESHOLD}-{classifier.digest[:16]}"
    )
    path = root / f"{name}.npz"
    with open(root / "reader-deck.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            rng = np.random.default_rng(ENROL_SEED)
            examples = (
                (card, render_scene(DESIGN, card, rng).image)
                for _ in range(PICTURES_PER_CARD)
                for card in ALL_FACES
            )
            deck = enrol(
                classifier, examples, name=f"{DESIGN} (test)", threshold=TEST_DECK_THRESHOLD
            )
            partial = path.with_suffix(".partial.npz")
            deck.save(partial)
            partial.replace(path)
    return path


@pytest.fixture(scope="module")
def reader_config(tmp_path_factory: pytest.TempPathFactory) -> ReaderConfig:
    return ReaderConfig(deck=enrolled_deck_file(tmp_path_factory), frames=3, deadline_s=1.0)


@pytest.fixture(scope="module")
def recogniser(reader_config: ReaderConfig):  # type: ignore[no-untyped-def]
    return load_recogniser(reader_config)


def reader_for(
    source: object, recogniser: object, config: ReaderConfig, **kwargs: object
) -> CameraReader:
    return CameraReader(source, lambda event: None, config=config, recogniser=recogniser, **kwargs)  # type: ignore[arg-type]


def baccarat_felt(seed: int = 3) -> tuple[SimulatedCamera, dict[str, Card]]:
    camera = SimulatedCamera("baccarat", DESIGN, seed=seed)
    dealt = {}
    for slot, text in (
        ("player.card1", "QH"),
        ("banker.card1", "7C"),
        ("player.card2", "4D"),
        ("banker.card2", "KS"),
    ):
        card = parse_card(text)
        camera.deal(slot, card)
        dealt[slot] = card
    return camera, dealt


def test_reads_the_cards_on_the_felt_and_never_a_wrong_one(
    recogniser: object, reader_config: ReaderConfig
) -> None:
    camera, dealt = baccarat_felt()
    reader = reader_for(camera, recogniser, reader_config)
    answers = {}
    for slot, _card in dealt.items():
        hand, number = slot.split(".card")
        answer = reader.read(AskCamera(hand, "misread", int(number)))
        assert answer.slot == slot
        answers[slot] = answer
    wrong = {s: a.card for s, a in answers.items() if a.card is not None and a.card != dealt[s]}
    assert not wrong
    read = [s for s, a in answers.items() if a.card == dealt[s]]
    # One abstention in four is allowed (a pause, not an error); a reader reading nothing
    # is not a reader.
    assert len(read) >= 3, {s: a.why for s, a in answers.items()}
    assert all(answers[s].frames >= reader_config.frames for s in read)


@pytest.mark.parametrize("game", ["blackjack-classic", "blackjack-21"])
def test_the_card_beneath_in_a_cascade_is_never_read_as_the_slots_card(
    game: str, recogniser: object, reader_config: ReaderConfig
) -> None:
    """A blackjack hand is a cascade that keeps every index in sight, so the region of a
    hand's second slot also shows the first card's index. With the second slot still empty,
    the reader must find no card there; a recogniser reading the whole region (what
    ``vision classify`` does with a picture of one card) reads the first card."""
    from vision.recognise import Recogniser

    camera = SimulatedCamera(game, DESIGN, seed=8)
    beneath = parse_card("9H")
    camera.deal("box1.hand1.card1", beneath)
    second = [camera.region("box1.hand1.card2", camera.next_frame()).image for _ in range(3)]
    anywhere = Recogniser(deck=recogniser.deck)  # type: ignore[attr-defined]
    assert anywhere.recognise_frames(second).card == beneath  # the test can fail
    assert recogniser.recognise_frames(second).card is None  # type: ignore[attr-defined]
    # ...while the first card itself is still read in its own slot.
    first = [camera.region("box1.hand1.card1", camera.next_frame()).image for _ in range(3)]
    assert recogniser.recognise_frames(first).card == beneath  # type: ignore[attr-defined]


def test_an_empty_slot_is_an_abstention(recogniser: object, reader_config: ReaderConfig) -> None:
    camera, _ = baccarat_felt()
    reader = reader_for(camera, recogniser, reader_config)
    started = time.monotonic()
    answer = reader.read(AskCamera("player", "misread", 3))  # nothing at player.card3
    assert answer.card is None
    assert answer.slot == "player.card3"
    assert answer.why == "no card found within the deadline"
    # It waited for the card to arrive, but not past its deadline (plus one last frame).
    assert time.monotonic() - started >= reader_config.deadline_s


@pytest.mark.parametrize(
    ("ask", "why"),
    [
        (AskCamera("box9", "misread", 1), "the camera has no region for this slot"),
        (AskCamera("player", "misread", 0), "no card slot"),
        (AskCamera("player two", "misread", 1), "no card slot"),
    ],
)
def test_a_slot_without_a_region_is_an_abstention(
    recogniser: object, reader_config: ReaderConfig, ask: AskCamera, why: str
) -> None:
    camera, _ = baccarat_felt()
    answer = reader_for(camera, recogniser, reader_config).read(ask)
    assert answer.card is None
    assert answer.why.startswith(why)


def test_no_camera_configured_abstains_at_once() -> None:
    events: queue.Queue[object] = queue.Queue()
    with CameraReader(None, events.put) as reader:
        reader.ask(AskCamera("player", "misread", 2))
        event = events.get(timeout=5)
    assert isinstance(event, CameraRead)
    assert event.position == "player" and event.card is None


def test_an_offline_camera_is_an_abstention(
    tmp_path: Path, recogniser: object, reader_config: ReaderConfig
) -> None:
    # A real capture thread whose source (a video file) is not there: it never delivers a
    # frame and keeps retrying, exactly as an unplugged camera does.
    camera_sim, _ = baccarat_felt()
    config = camera_sim.camera_config(
        str(tmp_path / "missing.avi"), reconnect_initial_s=0.1, reconnect_max_s=0.2, timeout_s=1
    )
    capture = CameraCapture(config)
    answers: list[CameraAnswer] = []
    events: queue.Queue[object] = queue.Queue()
    with capture:
        reader = CameraReader(
            capture,
            events.put,
            config=reader_config,
            recogniser=recogniser,  # type: ignore[arg-type]
            on_answer=answers.append,
        )
        with reader:
            reader.ask(AskCamera("player", "misread", 1))
            event = events.get(timeout=reader_config.deadline_s + 10)
    assert isinstance(event, CameraRead) and event.card is None
    assert answers[0].why == "no frame from the camera within the deadline"


class GreyCamera(SimulatedCamera):
    """The simulator, but its crops lose their colour channels: the recogniser refuses
    such an image (ConfigurationError), as it would any broken frame."""

    def region(self, position: str, frame: Frame | None = None) -> Crop:
        crop = super().region(position, frame)
        return Crop(crop.position, crop.image[:, :, 0], crop.number, crop.at)


def test_a_recogniser_failure_is_an_abstention(
    recogniser: object, reader_config: ReaderConfig
) -> None:
    camera = GreyCamera("baccarat", DESIGN, seed=3)
    camera.deal("player.card1", parse_card("QH"))
    answer = reader_for(camera, recogniser, reader_config).read(AskCamera("player", "misread", 1))
    assert answer.card is None
    assert answer.why == "recogniser error (ConfigurationError)"


def test_a_hole_card_asked_for_before_it_is_turned_over_is_read_once_it_is(
    recogniser: object, reader_config: ReaderConfig
) -> None:
    """The table asks for the hole card as it tells the dealer to turn it over: the first
    frames show its back. The reader looks again rather than answer from the back, and takes
    the card once two readings agree."""
    import dataclasses
    import threading

    camera = SimulatedCamera("blackjack-classic", DESIGN, seed=5)
    hole = parse_card("QH")
    camera.deal("dealer.card1", hole, face_down=True)
    patient = dataclasses.replace(reader_config, deadline_s=20.0)
    reader = reader_for(camera, recogniser, patient)
    turned = threading.Timer(0.5, camera.reveal, ("dealer.card1", hole))
    turned.start()
    try:
        answer = reader.read(AskCamera("dealer", "hole_reveal", 1))
    finally:
        turned.cancel()
        turned.join()
    assert answer.card == hole, answer.why
    # A face-down card asked about as a misread is one final reading: an abstention.
    camera.deal("dealer.card2", parse_card("4S"), face_down=True)
    assert (
        reader_for(camera, recogniser, patient).read(AskCamera("dealer", "misread", 2)).card is None
    )


def test_the_hole_card_is_never_logged_but_a_face_up_card_is(
    recogniser: object, reader_config: ReaderConfig, caplog: pytest.LogCaptureFixture
) -> None:
    camera = SimulatedCamera("blackjack-classic", DESIGN, seed=5)
    hole, up = parse_card("QH"), parse_card("3S")
    camera.deal("dealer.card1", hole)  # classic: the hole card is the dealer's first
    camera.deal("dealer.card2", up)
    reader = reader_for(camera, recogniser, reader_config)
    caplog.set_level(logging.DEBUG)
    hole_answer = reader.read(AskCamera("dealer", "hole_reveal", 1))
    hole_log = [record.getMessage() for record in caplog.records]
    caplog.clear()
    up_answer = reader.read(AskCamera("dealer", "cross_check", 2))
    up_log = [record.getMessage() for record in caplog.records]
    # Both were read (else the check below proves nothing), and only the face-up one logged.
    assert hole_answer.card == hole and up_answer.card == up
    assert hole_log and not any(str(hole) in line for line in hole_log), hole_log
    assert any(str(up) in line for line in up_log), up_log


def test_questions_are_answered_on_the_readers_thread_in_order(
    recogniser: object, reader_config: ReaderConfig
) -> None:
    camera, dealt = baccarat_felt()
    events: queue.Queue[object] = queue.Queue()
    reader = CameraReader(
        camera,
        events.put,
        config=reader_config,
        recogniser=recogniser,  # type: ignore[arg-type]
        clock=lambda: 1234.5,
    )
    with reader:
        started = time.monotonic()
        reader.ask(AskCamera("player", "cross_check", 1))
        reader.ask(AskCamera("banker", "misread", 9))  # no such slot in the layout
        asked_in = time.monotonic() - started
        first, second = events.get(timeout=30), events.get(timeout=30)
    assert asked_in < 0.5  # queued, not read, on the asking thread (a generous bound)
    assert isinstance(first, CameraRead) and first.position == "player"
    assert first.card in (dealt["player.card1"], None)
    assert first.at == 1234.5
    assert isinstance(second, CameraRead) and second.position == "banker"
    assert second.card is None
    assert reader.answered == 2


def test_a_missing_deck_fails_at_start_not_at_every_read(tmp_path: Path) -> None:
    camera, _ = baccarat_felt()
    reader = CameraReader(camera, lambda e: None, config=ReaderConfig(deck=tmp_path / "no.npz"))
    with pytest.raises(ConfigurationError, match="not found"):
        reader.start()


def test_a_camera_without_a_deck_fails_at_start(tmp_path: Path) -> None:
    # A camera handed to the table directly (as the demo hands its simulator) is held to the
    # configuration's rule: the shipped model alone reads some designs surely wrong.
    camera, _ = baccarat_felt()
    reader = CameraReader(camera, lambda e: None, config=ReaderConfig())
    with pytest.raises(ConfigurationError, match="livetable camera enrol"):
        reader.start()
    with CameraReader(None, lambda e: None):  # no camera at all: every question abstains
        pass


def test_reader_config_from_a_vision_table(tmp_path: Path) -> None:
    config = ReaderConfig.from_mapping(
        {"deck": "decks/studio.npz", "frames": 5, "deadline_s": 1.5}, base_dir=tmp_path, environ={}
    )
    assert config == ReaderConfig(deck=tmp_path / "decks/studio.npz", frames=5, deadline_s=1.5)
    override = ReaderConfig.from_mapping(
        {"deck": "a.npz"}, base_dir=tmp_path, environ={"LIVETABLE_VISION_DECK": "/srv/b.npz"}
    )
    assert override.deck == Path("/srv/b.npz")
    for bad, message in [
        ({"dek": "a.npz"}, "unknown key"),
        ({"frames": 0}, "frames must be 1..25"),
        ({"frames": 2.5}, "whole number"),
        ({"deadline_s": float("nan")}, "deadline_s must be in"),
        ({"deck": 3}, "file path"),
    ]:
        with pytest.raises(ConfigurationError, match=message):
            ReaderConfig.from_mapping(bad, environ={})


def test_importing_the_reader_does_not_import_opencv() -> None:
    code = "import drivers.camera_reader, sys\nprint('cv2' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        check=True,
    )
    assert done.stdout.strip() == "False"


def test_reads_through_the_real_capture_path(
    tmp_path: Path, recogniser: object, reader_config: ReaderConfig
) -> None:
    # The simulator's table recorded to a lossless video, replayed by the capture thread
    # (cv2.VideoCapture) with the simulator's region map: the reader works on the driver's
    # frames exactly as on the simulator's.
    camera, dealt = baccarat_felt()
    video = camera.write_video(tmp_path / "table.mkv", frames=40, fps=25.0)
    config = camera.camera_config(str(video), reconnect_initial_s=0.1, timeout_s=2)
    answers: list[CameraAnswer] = []
    with CameraCapture(config) as capture:
        assert capture.wait_for_frame(timeout=10) is not None
        reader = reader_for(capture, recogniser, reader_config)
        for slot in dealt:
            hand, number = slot.split(".card")
            answers.append(reader.read(AskCamera(hand, "misread", int(number))))
    truth = list(dealt.values())
    assert not [a for a, card in zip(answers, truth, strict=True) if a.card not in (card, None)]
    assert sum(a.card == card for a, card in zip(answers, truth, strict=True)) >= 3, [
        a.why for a in answers
    ]
