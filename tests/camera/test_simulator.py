"""The camera simulator on real pixels and real artwork: deterministic, cards inside their
regions under every perturbation, and the whole capture path from a video it wrote."""

from __future__ import annotations

import dataclasses
import queue
from pathlib import Path

import cv2
import numpy as np
import pytest

from controller.games.base import CardNeeded
from controller.games.registry import GAME_IDS, game_spec
from controller.kernel.cards import Card, parse_card
from controller.kernel.errors import ConfigurationError, DeviceError
from controller.tools.cli import main
from drivers.camera import CameraCapture, CameraConfig, card_slot
from drivers.camera_events import CameraEvent, CameraOnline
from simulators.camera import Perturbations, SimulatedCamera, layout_for

# Two designs from different families (aisleriot, KDE); never the reserved one.
DESIGNS = ("anglo", "kde-standard")
SIZE = {"width": 640, "height": 360}
TIMEOUT_S = 10.0
# A pixel changed by a card differs by more than noise, blur and light ever make it.
CHANGED = 40


def _camera(seed: int = 0, game: str = "baccarat", design: str = DESIGNS[0], **kw: object):
    return SimulatedCamera(game, design, seed=seed, **SIZE, **kw)  # type: ignore[arg-type]


def _changed_mask(with_card: np.ndarray, without: np.ndarray) -> np.ndarray:
    return np.abs(with_card.astype(np.int16) - without.astype(np.int16)).max(axis=2) > CHANGED


def test_the_same_seed_and_deals_give_identical_frames_and_another_seed_does_not() -> None:
    frames = []
    for seed in (7, 7, 8):
        camera = _camera(seed)
        camera.deal("player.card1", parse_card("QH"))
        camera.deal("banker.card1", parse_card("9S"))
        frames.append(camera.next_frame().image)
        assert camera.regions == _camera(seed).regions
    assert np.array_equal(frames[0], frames[1])
    assert not np.array_equal(frames[0], frames[2])


@pytest.mark.parametrize("game", GAME_IDS)
def test_every_position_has_a_region_inside_the_frame(game: str) -> None:
    camera = _camera(3, game)
    layout = layout_for(game, **SIZE)
    assert set(camera.regions) == set(layout.spots)
    assert set(layout.deal_order) <= set(layout.spots)
    # Every spot is a card slot the daemon can name from the rules' hand and card number.
    for name in layout.spots:
        hand, _, card = name.rpartition(".card")
        assert card_slot(hand, int(card)) == name
    # The first card lies where the rules deal a round's first card.
    first_step = game_spec(game).new_round(1).next_step()
    assert isinstance(first_step, CardNeeded)
    assert layout.deal_order[0] == card_slot(first_step.position, 1)
    # The published map is a valid camera config: the same validation a table's TOML gets.
    config = camera.camera_config("/tmp/table.avi")
    assert config.regions == camera.regions
    assert (config.width, config.height) == (640, 360)


@pytest.mark.parametrize("seed", range(6))
def test_each_card_lies_inside_its_region_under_the_perturbations(seed: int) -> None:
    # Same seed, same frame number: the two pictures share felt, light and noise, so they
    # differ exactly where the card (and its shadow) lies. JPEG is off: its 8x8 blocks would
    # smear the difference a few pixels past the card.
    perturbations = dataclasses.replace(Perturbations(), jpeg_quality=None)
    game = GAME_IDS[seed % len(GAME_IDS)]
    empty = _camera(seed, game, perturbations=perturbations)
    empty_image = empty.next_frame().image
    layout = empty.layout
    positions = [*layout.deal_order[:4], list(layout.spots)[-1]]
    for index, position in enumerate(positions):
        camera = _camera(seed, game, perturbations=perturbations)
        card = parse_card(["QH", "AS", "TD", "7C", "KS"][index])
        camera.deal(position, card)
        changed = _changed_mask(camera.next_frame().image, empty_image)
        assert changed.sum() > 0.5 * layout.card_width * layout.card_height
        region = camera.regions[position]
        inside = np.zeros(changed.shape, np.uint8)
        cv2.fillConvexPoly(inside, np.round(np.array(region.corners)).astype(np.int32), 1)
        inside = cv2.dilate(inside, np.ones((3, 3), np.uint8))  # rounding of the corners
        outside = changed & (inside == 0)
        assert outside.sum() == 0, f"{game} seed {seed}: {position} card leaks out of its region"


def test_rotation_and_placement_vary_within_the_bounds() -> None:
    angles = []
    for seed in range(12):
        clean = Perturbations.none()
        rotated = dataclasses.replace(clean, rotation_deg=20.0)
        empty = _camera(seed, perturbations=rotated)
        camera = _camera(seed, perturbations=rotated)
        camera.deal("player.card1", parse_card("5D"))
        changed = _changed_mask(camera.next_frame().image, empty.next_frame().image)
        points = np.argwhere(changed)[:, ::-1].astype(np.float32)
        (_, _), (w, h), angle = cv2.minAreaRect(points)
        # minAreaRect reports (0, 90]; fold it to the card's tilt from upright, -45..45.
        tilt = angle if angle <= 45 else angle - 90
        if w > h:  # the long side is the card's height
            tilt = angle - 90 if angle > 0 else angle
        tilt = (tilt + 45) % 90 - 45
        angles.append(tilt)
    assert all(abs(a) <= 21.5 for a in angles), angles
    assert max(abs(a) for a in angles) > 10, angles
    assert len({round(a) for a in angles}) > 6, angles


def test_region_crops_show_the_dealt_card_and_only_felt_elsewhere() -> None:
    for design in DESIGNS:
        camera = _camera(11, design=design)
        card_area = camera.layout.card_width * camera.layout.card_height
        before = {name: camera.region(name).image for name in camera.regions}
        for position, card in (("player.card1", "KH"), ("banker.card2", "4C")):
            camera.deal(position, parse_card(card))
            crop = camera.region(position).image
            changed = _changed_mask(crop, before[position])
            assert changed.sum() > 0.6 * card_area, f"{design}: {position} shows no card"
            # A card face is mostly white paper: bright and unsaturated.
            hsv = cv2.cvtColor(crop, cv2.COLOR_BGR2HSV)
            paper = ((hsv[:, :, 1] < 60) & (hsv[:, :, 2] > 150)).sum()
            assert paper > 0.3 * card_area, f"{design}: {position} crop has no card paper"
            if position == "player.card1":
                # The banker's side, across the table, is still bare felt.
                for name in ("banker.card1", "banker.card2", "banker.card3"):
                    felt = _changed_mask(camera.region(name).image, before[name])
                    assert felt.mean() < 0.01, f"{design}: {name} changed, nothing was dealt"


def test_the_frame_source_interface() -> None:
    camera = _camera(1)
    camera.start()
    first = camera.latest()
    assert camera.latest() is first  # nothing changed: the same picture
    assert camera.wait_for_frame(newer_than=first.number).number == first.number + 1
    camera.deal("player.card1", parse_card("2H"))
    dealt = camera.latest()
    assert dealt.number > first.number
    assert dealt.at > first.at
    with pytest.raises(ValueError):
        dealt.image[0, 0, 0] = 0
    crop = camera.region("player.card1")
    assert crop.number == dealt.number and crop.position == "player.card1"
    with pytest.raises(ConfigurationError, match="no camera region for position 'box1"):
        camera.region("box1.hand1.card1")
    with pytest.raises(ConfigurationError, match=r"no position 'dealer\.card1'"):
        camera.deal("dealer.card1", parse_card("2H"))
    with pytest.raises(DeviceError, match="already holds a card"):
        camera.deal("player.card1", parse_card("3H"))
    camera.deal("banker.card1", parse_card("AS"), face_down=True)
    hidden = camera.region("banker.card1").image
    camera.reveal("banker.card1", parse_card("AS"))
    shown = camera.region("banker.card1").image
    assert _changed_mask(shown, hidden).mean() > 0.1
    assert camera.dealt() == {"player.card1": parse_card("2H"), "banker.card1": parse_card("AS")}
    camera.clear()
    assert camera.dealt() == {}
    camera.stop()


def test_the_reserved_design_and_unknown_games_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="reserved"):
        SimulatedCamera("baccarat", "bonded")
    with pytest.raises(ConfigurationError, match="no camera layout for game 'poker'"):
        SimulatedCamera("poker", DESIGNS[0])
    with pytest.raises(ConfigurationError, match="needs a card design"):
        SimulatedCamera("baccarat")
    with pytest.raises(ConfigurationError, match="non-negative"):
        SimulatedCamera("baccarat", DESIGNS[0], seed=-1)


def test_a_face_provider_can_replace_the_artwork() -> None:
    def red_cards(card: Card, height: int) -> np.ndarray:
        return np.full((height, round(height * 0.7), 3), (0, 0, 200), np.uint8)

    camera = SimulatedCamera(
        "baccarat", faces=red_cards, seed=2, perturbations=Perturbations.none(), **SIZE
    )
    camera.deal("player.card1", parse_card("9D"))
    crop = camera.region("player.card1").image
    # Clean camera: the region is the card's own rectangle, filled with the provider's red.
    red = (crop[:, :, 2] > 150) & (crop[:, :, 1] < 60)
    layout = camera.layout
    # The region is the card plus a few pixels for its shadow: most of it is the red card.
    assert red.sum() > 0.9 * layout.card_width * layout.card_height
    assert red.mean() > 0.6


def test_frames_written_to_png_files_read_back(tmp_path: Path) -> None:
    camera = _camera(4)
    camera.deal("banker.card1", parse_card("JD"))
    paths = camera.write_frames(tmp_path / "frames", 3)
    assert [p.name for p in paths] == ["frame-000001.png", "frame-000002.png", "frame-000003.png"]
    image = cv2.imread(str(paths[-1]))
    assert image.shape == (360, 640, 3)
    assert np.array_equal(image, camera.latest().image)


def _next_online(events: queue.Queue[CameraEvent]) -> CameraEvent:
    while True:
        event = events.get(timeout=TIMEOUT_S)
        if isinstance(event, CameraOnline):
            return event


def test_end_to_end_simulator_video_capture_thread_region_crop(tmp_path: Path) -> None:
    """simulator -> video file -> cv2.VideoCapture -> capture thread -> region crop."""
    simulator = _camera(5)
    video = tmp_path / "round.avi"
    written = []
    with simulator.open_video(video, fps=50) as recorder:
        for frame in simulator.frames(10):  # the empty table
            recorder.write(frame)
            written.append(frame)
        simulator.deal("player.card1", parse_card("8S"))
        simulator.deal("player.card2", parse_card("QD"))
        for frame in simulator.frames(30):
            recorder.write(frame)
            written.append(frame)
    config = simulator.camera_config(str(video), timeout_s=2.0)
    assert config.source == str(video)
    events: queue.Queue[CameraEvent] = queue.Queue()
    with CameraCapture(config, events.put) as camera:
        online = _next_online(events)
        assert isinstance(online, CameraOnline)
        assert (online.width, online.height) == (640, 360)
        frame = camera.wait_for_frame(timeout=TIMEOUT_S)
        # Wait until the capture has reached the part of the video with the cards dealt.
        while frame is not None and (frame.number - 1) % len(written) < 15:
            frame = camera.wait_for_frame(newer_than=frame.number, timeout=TIMEOUT_S)
        assert frame is not None
        crop = camera.region("player.card2", frame).image
    # The capture numbers frames from 1 and keeps counting when the file replays.
    sent = written[(frame.number - 1) % len(written)]
    dealt_crop = simulator.region("player.card2", sent).image
    empty_crop = simulator.region("player.card2", written[5]).image
    assert crop.shape == dealt_crop.shape
    # MJPG round trip: the captured crop is the simulator's own, within compression error,
    # and far from the felt that lay there before the card was dealt.
    to_dealt = np.abs(crop.astype(np.int16) - dealt_crop).mean()
    to_empty = np.abs(crop.astype(np.int16) - empty_crop).mean()
    assert to_dealt < 4, to_dealt
    assert to_empty > 5 * to_dealt + 10, (to_empty, to_dealt)


def test_sim_camera_command_writes_video_crops_and_a_config_that_calibrate_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sim"
    status = main(
        ["sim", "camera", "--design", DESIGNS[1], "--size", "640x360", "--seed", "9",
         "--cards", "QH,9S,5D", "--deal", "banker.card2=KC:down", "--frames-per-card", "2",
         "--video", str(out / "round.mkv"), "--crops-dir", str(out / "crops"),
         "--config-out", str(out / "camera.toml")]
    )  # fmt: skip
    assert status == 0
    printed = capsys.readouterr().out
    assert "8 frames of baccarat" in printed
    crops = sorted(p.name for p in (out / "crops").iterdir())
    # The face-down card has no crop: nothing could read it.
    assert [name.split("_")[0] for name in crops] == ["5D", "9S", "QH"]
    assert crops[2].startswith("QH_baccarat-s9-player.card1-")
    capture = cv2.VideoCapture(str(out / "round.mkv"))
    count = 0
    while capture.read()[0]:
        count += 1
    capture.release()
    assert count == 8
    import tomllib

    config = CameraConfig.from_mapping(tomllib.loads((out / "camera.toml").read_text())["camera"])
    assert config.source == str((out / "round.mkv").resolve())
    assert "banker.card2" in config.regions
    snapshot = tmp_path / "snap.png"
    assert (
        main(
            ["camera", "calibrate", "--config", str(out / "camera.toml"), "--output", str(snapshot)]
        )
        == 0
    )
    assert cv2.imread(str(snapshot)).shape == (360, 640, 3)


def test_sim_camera_command_refuses_bad_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["sim", "camera", "--design", DESIGNS[0], "--video", str(tmp_path / "v.avi")]
    assert main([*base, "--cards", "QH,ZZ"]) == 1
    assert "bad card 'ZZ'" in capsys.readouterr().err
    assert main([*base, "--deal", "box9=QH"]) == 1
    assert "no position 'box9'" in capsys.readouterr().err
    assert main(["sim", "camera", "--design", "bonded", "--video", str(tmp_path / "v.avi")]) == 1
    assert "reserved" in capsys.readouterr().err
    assert main(["sim", "camera", "--design", DESIGNS[0]]) == 1
    assert "nothing to write" in capsys.readouterr().err
    assert main([*base, "--video", str(tmp_path / "v.gif")]) == 1
    assert "use one of .avi, .mkv, .mp4" in capsys.readouterr().err
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    crops = ["--random", "1", "--frames-per-card", "1", "--crops-dir", str(blocker / "crops")]
    assert main(["sim", "camera", "--design", DESIGNS[0], *crops]) == 1
    assert "cannot write the output" in capsys.readouterr().err


def test_a_split_moves_the_second_card_to_the_new_hand() -> None:
    camera = _camera(6, "blackjack-classic", perturbations=Perturbations.none())
    empty = camera.region("box2.hand2.card1").image
    camera.deal(card_slot("box2", 1), parse_card("8H"))
    camera.deal(card_slot("box2", 2), parse_card("8S"))
    camera.move("box2.hand1.card2", card_slot("box2.hand2", 1))
    assert camera.dealt() == {
        "box2.hand1.card1": parse_card("8H"),
        "box2.hand2.card1": parse_card("8S"),
    }
    moved = camera.region("box2.hand2.card1").image
    card_area = camera.layout.card_width * camera.layout.card_height
    assert _changed_mask(moved, empty).sum() > 0.6 * card_area
    with pytest.raises(DeviceError, match="no card at position"):
        camera.move("box2.hand1.card2", "box2.hand2.card2")
    with pytest.raises(DeviceError, match="already holds a card"):
        camera.move("box2.hand1.card1", "box2.hand2.card1")


def test_neighbouring_cards_overlap_on_the_layout() -> None:
    perturbations = dataclasses.replace(Perturbations(), jpeg_quality=None)
    overlapping = 0
    for seed in range(4):
        empty = _camera(seed, perturbations=perturbations).next_frame().image
        masks = []
        for position in ("player.card1", "player.card2"):
            camera = _camera(seed, perturbations=perturbations)
            camera.deal(position, parse_card("AH"))
            masks.append(_changed_mask(camera.next_frame().image, empty))
        # Where both cards would lie, the second (dealt later) covers the first.
        shared = int((masks[0] & masks[1]).sum())
        overlapping += shared > 50
    # The seeds are fixed: seed 3's two player cards share about a hundred pixels.
    assert overlapping >= 1
