"""Enrolling the studio's deck from the table camera, on real pixels: the camera simulator's
felt, a real capture from a video file, the real locator, enrolment and recogniser.

The person laying the cards is a callback that deals the asked card into the slot of a
:class:`SimulatedCamera`; every deal lands a little differently (the simulator perturbs each
card it lays), as a card moved between pictures does.
"""

from __future__ import annotations

import errno
import io
import shutil
from pathlib import Path

import pytest

from controller.kernel.cards import ALL_FACES, Card, parse_card
from controller.kernel.errors import ConfigurationError, DeviceError
from drivers import camera_enrol
from drivers.camera import CameraCapture
from drivers.camera_enrol import Collection, card_at_centre, collect_pictures, pictures_in
from simulators.camera import SimulatedCamera
from vision.enrol import read_image

DESIGN = "kde-standard"
SLOT = "player.card1"
PICTURES_PER_CARD = 4
# Reading checks on a felt the deck never saw (another seed: other light, angle, noise).
READ_SEED = 97
READ_SLOTS = ("player.card1", "banker.card1", "player.card3")


class Dealer:
    """Lays the asked card in the slot, alone, afresh each time; records what it was asked."""

    def __init__(self, camera: SimulatedCamera, slot: str = SLOT) -> None:
        self.camera = camera
        self.slot = slot
        self.asked: list[tuple[Card, int, int]] = []

    def __call__(self, card: Card, k: int, n: int) -> None:
        self.asked.append((card, k, n))
        self.camera.clear()
        self.camera.deal(self.slot, card)


@pytest.fixture(scope="module")
def collected(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Collection, Dealer]:
    camera = SimulatedCamera("baccarat", DESIGN, seed=21)
    dealer = Dealer(camera)
    collection = collect_pictures(
        camera,
        SLOT,
        ALL_FACES,
        PICTURES_PER_CARD,
        dealer,
        tmp_path_factory.mktemp("pictures"),
        timeout_s=1.0,
    )
    return collection, dealer


@pytest.fixture(scope="module")
def deck(collected: tuple[Collection, Dealer]):  # type: ignore[no-untyped-def]
    from vision.enrol import enrol, labelled_images, read_image
    from vision.model import DEFAULT_MODEL, CornerClassifier

    collection, _ = collected
    images = labelled_images(collection.directory)
    return enrol(
        CornerClassifier(DEFAULT_MODEL),
        ((item.card, read_image(item.path)) for item in images),
        name="camera-enrolled",
    )


def test_collects_every_picture_asked_for_as_labelled_files(
    collected: tuple[Collection, Dealer],
) -> None:
    collection, dealer = collected
    assert len(collection.written) == PICTURES_PER_CARD * len(ALL_FACES)
    assert pictures_in(collection.directory) == {card: PICTURES_PER_CARD for card in ALL_FACES}
    # Every picture was asked for, in order, and a card laid again only after a refusal.
    assert len(dealer.asked) == len(collection.written) + collection.retries
    assert [a for a in dict.fromkeys(dealer.asked)] == [
        (card, k, PICTURES_PER_CARD) for card in ALL_FACES for k in range(1, 5)
    ]
    import cv2

    first = cv2.imread(str(collection.directory / "AS_001.png"))
    assert first is not None
    # The slot's region, not the whole frame, with the card at its centre.
    assert first.shape[:2] == dealer.camera.region(SLOT).image.shape[:2]
    assert card_at_centre(first)
    assert not any(p.name.startswith(".") for p in collection.directory.iterdir())


def test_the_enrolled_deck_reads_the_cards_in_their_slots_and_never_a_wrong_one(
    deck,  # type: ignore[no-untyped-def]
) -> None:
    from vision.recognise import Recogniser

    recogniser = Recogniser(deck=deck, slot_centred=True)
    camera = SimulatedCamera("baccarat", DESIGN, seed=READ_SEED)
    wrong: list[str] = []
    read = 0
    for index, card in enumerate(ALL_FACES):
        slot = READ_SLOTS[index % len(READ_SLOTS)]
        camera.clear()
        camera.deal(slot, card)
        answer = recogniser.recognise(camera.region(slot, camera.next_frame()).image)
        if answer.card is None:
            continue
        if answer.card != card:
            wrong.append(f"{card} at {slot} read as {answer.card} ({answer.confidence:.4f})")
        else:
            read += 1
    assert not wrong
    # Abstentions are pauses, not errors, but a deck that reads few cards is no deck.
    assert read >= 0.9 * len(ALL_FACES), f"read {read} of {len(ALL_FACES)}"


def test_an_unknown_slot_is_refused_before_anything_is_asked(tmp_path: Path) -> None:
    camera = SimulatedCamera("baccarat", DESIGN, seed=3)
    dealer = Dealer(camera)
    with pytest.raises(ConfigurationError, match=r"no camera region for slot 'player\.card9'"):
        collect_pictures(camera, "player.card9", ALL_FACES[:1], 1, dealer, tmp_path, 1.0)
    assert dealer.asked == []
    assert list(tmp_path.iterdir()) == []


def test_a_camera_that_gives_no_frame_is_a_clear_device_error(tmp_path: Path) -> None:
    simulator = SimulatedCamera("baccarat", DESIGN, seed=3)
    config = simulator.camera_config(str(tmp_path / "no-such-video.mkv"), timeout_s=0.3)
    asked: list[Card] = []
    with (
        CameraCapture(config) as capture,
        pytest.raises(DeviceError, match=r"no frame from the camera within 0\.3 s"),
    ):
        collect_pictures(
            capture,
            SLOT,
            ALL_FACES[:1],
            2,
            lambda card, _k, _n: asked.append(card),
            tmp_path / "pictures",
            timeout_s=0.3,
        )
    assert asked == [ALL_FACES[0]]
    assert list((tmp_path / "pictures").iterdir()) == []


def test_an_empty_slot_is_asked_for_again_then_refused(tmp_path: Path) -> None:
    camera = SimulatedCamera("baccarat", DESIGN, seed=5)
    asked: list[tuple[Card, int, int]] = []
    told: list[str] = []
    with pytest.raises(DeviceError, match=r"no card found at the centre of slot player\.card1"):
        collect_pictures(
            camera,
            SLOT,
            [parse_card("7H")],
            2,
            lambda card, k, n: asked.append((card, k, n)),  # lays nothing
            tmp_path,
            1.0,
            tell=told.append,
            attempts=3,
        )
    assert asked == [(parse_card("7H"), 1, 2)] * 3
    assert len(told) == 2 and "lay 7H in it again" in told[0]
    assert list(tmp_path.iterdir()) == []


def test_a_card_laid_after_a_refusal_is_taken(tmp_path: Path) -> None:
    camera = SimulatedCamera("baccarat", DESIGN, seed=5)
    dealer = Dealer(camera)
    calls = 0

    def late_dealer(card: Card, k: int, n: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            camera.clear()  # the first time, the card is still in the dealer's hand
        else:
            dealer(card, k, n)

    collection = collect_pictures(camera, SLOT, [parse_card("QS")], 1, late_dealer, tmp_path, 1.0)
    assert collection.retries >= 1
    assert [p.name for p in collection.written] == ["QS_001.png"]


def test_an_interrupted_session_resumes_where_it_stopped_and_loses_nothing(
    tmp_path: Path,
) -> None:
    camera = SimulatedCamera("baccarat", DESIGN, seed=8)
    cards = [parse_card("2C"), parse_card("KD")]
    # A picture already in the folder under the name a new one would take, and the remains
    # of a write that was interrupted.
    import cv2

    kept = tmp_path / "2C_001.png"
    camera.deal(SLOT, cards[0])
    assert cv2.imwrite(str(kept), camera.region(SLOT).image)
    kept_bytes = kept.read_bytes()
    (tmp_path / ".2C_002.png.partial").write_bytes(b"half a png")

    dealer = Dealer(camera)

    def interrupted(card: Card, k: int, n: int) -> None:
        if card == cards[1] and k == 2:
            raise KeyboardInterrupt  # Ctrl-C while the second picture of KD is asked for
        dealer(card, k, n)

    with pytest.raises(KeyboardInterrupt):
        collect_pictures(camera, SLOT, cards, 3, interrupted, tmp_path, 1.0)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["2C_001.png", "2C_002.png", "2C_003.png", "KD_001.png"]
    assert kept.read_bytes() == kept_bytes
    written_before = {name: (tmp_path / name).read_bytes() for name in names}

    dealer.asked.clear()
    collection = collect_pictures(camera, SLOT, cards, 3, dealer, tmp_path, 1.0)
    assert collection.already_there == {cards[0]: 3, cards[1]: 1}
    assert dict.fromkeys(dealer.asked) == {(cards[1], 2, 3): None, (cards[1], 3, 3): None}
    assert pictures_in(tmp_path) == {cards[0]: 3, cards[1]: 3}
    for name, content in written_before.items():
        assert (tmp_path / name).read_bytes() == content


def test_a_picture_never_replaces_an_existing_file(tmp_path: Path) -> None:
    camera = SimulatedCamera("baccarat", DESIGN, seed=9)
    dealer = Dealer(camera)
    # A picture already there counts, keeps its name and content, and the new one takes
    # the next free number.
    (tmp_path / "5H_001.png").write_bytes(b"not overwritten")
    collection = collect_pictures(camera, SLOT, [parse_card("5H")], 2, dealer, tmp_path, 1.0)
    assert [p.name for p in collection.written] == ["5H_002.png"]
    assert (tmp_path / "5H_001.png").read_bytes() == b"not overwritten"


def test_a_badly_named_picture_in_the_folder_is_refused_at_once(tmp_path: Path) -> None:
    camera = SimulatedCamera("baccarat", DESIGN, seed=9)
    dealer = Dealer(camera)
    (tmp_path / "holiday.png").write_bytes(b"")
    with pytest.raises(ConfigurationError, match=r"holiday\.png"):
        collect_pictures(camera, SLOT, [parse_card("5H")], 1, dealer, tmp_path, 1.0)
    assert dealer.asked == []


def test_an_empty_felt_has_no_card_at_the_centre_of_any_slot() -> None:
    for game in ("baccarat", "blackjack-classic"):
        camera = SimulatedCamera(game, DESIGN, seed=31)
        frame = camera.next_frame()
        empty = [
            slot for slot in camera.regions if card_at_centre(camera.region(slot, frame).image)
        ]
        assert empty == [], game


def test_the_command_collects_what_is_missing_from_a_video_source_and_enrols_the_deck(
    collected: tuple[Collection, Dealer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from controller.tools.cli import main
    from vision.deck import EnrolledDeck

    collection, _ = collected
    missing = parse_card("7H")
    # An earlier session stopped after the first picture of 7H: the default picture folder
    # next to the deck holds everything else.
    pictures = tmp_path / "studio.pictures"
    shutil.copytree(collection.directory, pictures)
    for path in sorted(pictures.glob(f"{missing}_*.png"))[1:]:
        path.unlink()
    # The table camera, as a lossless video of the felt with 7H lying in the slot.
    camera = SimulatedCamera("baccarat", DESIGN, seed=21)
    camera.deal(SLOT, missing)
    video = camera.write_video(tmp_path / "table.mkv", frames=8)
    config = tmp_path / "camera.toml"
    config.write_text(camera.camera_config(str(video), timeout_s=2.0).to_toml())
    deck_path = tmp_path / "studio.npz"
    command = ["camera", "enrol", "--config", str(config), "--slot", SLOT, "-o", str(deck_path),
               "--pictures", str(PICTURES_PER_CARD)]  # fmt: skip

    # The person at the table leaves after one more picture: nothing taken is lost.
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    assert main(command) == 1
    output = capsys.readouterr()
    assert "lay 7H in slot player.card1 (picture 2 of 4;" in output.out
    assert "the input ended before every picture was taken" in output.err
    assert pictures_in(pictures)[missing] == 2
    assert not deck_path.exists()

    monkeypatch.setattr("sys.stdin", io.StringIO("\n" * 20))
    assert main(command) == 0
    printed = capsys.readouterr().out
    assert "picture 3 of 4" in printed and "picture 4 of 4" in printed
    assert "picture 2 of 4" not in printed
    total = PICTURES_PER_CARD * len(ALL_FACES)
    assert f"took 2 pictures of slot {SLOT} into {pictures} ({total - 2} were already there)" in (
        printed
    )
    assert f"enrolled {total} images" in printed
    deck = EnrolledDeck.load(deck_path)
    assert f"threshold {deck.threshold:.6f}; {deck.calibration_summary()}" in printed
    assert printed.count("calibration: ") == 1
    assert deck.info["pictures"] <= total and deck.info["name"] == "studio"
    assert pictures_in(pictures) == {card: PICTURES_PER_CARD for card in ALL_FACES}


def test_the_command_refuses_a_slot_the_config_does_not_have(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from controller.tools.cli import main

    camera = SimulatedCamera("baccarat", DESIGN, seed=21)
    config = tmp_path / "camera.toml"
    config.write_text(camera.camera_config(str(tmp_path / "table.mkv")).to_toml())
    command = ["camera", "enrol", "--config", str(config), "--slot", "dealer.card1",
               "-o", str(tmp_path / "deck.npz")]  # fmt: skip
    assert main(command) == 1
    assert "no camera region for slot 'dealer.card1'" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["camera.toml"]


def _no_hard_links(source: object, destination: object) -> None:
    """``os.link`` as on exFAT or an SMB share: the filesystem has no hard links."""
    raise PermissionError(errno.EPERM, "Operation not permitted", str(source))


def test_a_folder_without_hard_links_still_takes_pictures_and_never_overwrites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(camera_enrol.os, "link", _no_hard_links)
    camera = SimulatedCamera("baccarat", DESIGN, seed=9)
    (tmp_path / "5H_001.png").write_bytes(b"not overwritten")
    collection = collect_pictures(
        camera, SLOT, [parse_card("5H")], 3, Dealer(camera), tmp_path, 1.0
    )
    assert [p.name for p in collection.written] == ["5H_002.png", "5H_003.png"]
    assert (tmp_path / "5H_001.png").read_bytes() == b"not overwritten"
    assert card_at_centre(read_image(tmp_path / "5H_003.png"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["5H_001.png", "5H_002.png", "5H_003.png"]


def test_a_name_claimed_by_a_stopped_session_is_freed_and_not_counted(tmp_path: Path) -> None:
    # Without hard links a picture's name is claimed by an empty file before the picture is
    # renamed over it; a session stopped in between leaves that empty file.
    (tmp_path / "5H_001.png").write_bytes(b"")
    camera = SimulatedCamera("baccarat", DESIGN, seed=9)
    collection = collect_pictures(
        camera, SLOT, [parse_card("5H")], 1, Dealer(camera), tmp_path, 1.0
    )
    assert collection.already_there == {parse_card("5H"): 0}
    assert [p.name for p in collection.written] == ["5H_001.png"]
    assert card_at_centre(read_image(tmp_path / "5H_001.png"))


def test_without_hard_links_a_file_appearing_under_the_name_is_never_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Someone else's file appears under the picture's name between the check that the name
    # is free and the moment the picture takes it: the exclusive claim must notice.
    theirs = tmp_path / "5H_001.png"

    def link_after_a_file_appeared(source: object, destination: object) -> None:
        if Path(str(destination)) == theirs and not theirs.exists():
            theirs.write_bytes(b"someone else's")
        _no_hard_links(source, destination)

    monkeypatch.setattr(camera_enrol.os, "link", link_after_a_file_appeared)
    camera = SimulatedCamera("baccarat", DESIGN, seed=9)
    collection = collect_pictures(
        camera, SLOT, [parse_card("5H")], 1, Dealer(camera), tmp_path, 1.0
    )
    assert theirs.read_bytes() == b"someone else's"
    assert [p.name for p in collection.written] == ["5H_002.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["5H_001.png", "5H_002.png"]


def test_without_hard_links_a_failed_rename_leaves_no_empty_picture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(source: object, destination: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(destination))

    monkeypatch.setattr(camera_enrol.os, "link", _no_hard_links)
    monkeypatch.setattr(camera_enrol.os, "replace", disk_full)
    camera = SimulatedCamera("baccarat", DESIGN, seed=9)
    with pytest.raises(ConfigurationError, match=r"5H_001\.png.*No space left"):
        collect_pictures(camera, SLOT, [parse_card("5H")], 1, Dealer(camera), tmp_path, 1.0)
    assert list(tmp_path.iterdir()) == []


def test_an_empty_picture_left_by_a_stopped_session_is_named_by_vision_enrol(
    tmp_path: Path,
) -> None:
    (tmp_path / "5H_001.png").write_bytes(b"")
    with pytest.raises(ConfigurationError, match=r"5H_001\.png is empty.*camera enrol"):
        read_image(tmp_path / "5H_001.png")
