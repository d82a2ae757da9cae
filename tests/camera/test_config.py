"""Camera config validation: what a table's TOML ``[camera]`` table may say, and the errors."""

from __future__ import annotations

import tomllib
from typing import Any

import numpy as np
import pytest

from controller.kernel.errors import ConfigurationError
from drivers.camera import CameraConfig, Region, card_slot, crop_region

GOOD_TOML = """
[camera]
source = "rtsp://studio:hunter2@10.0.0.7:554/table1"
resolution = [1280, 720]
fps = 30
reconnect_initial_s = 0.25

[camera.regions]
player1 = [100, 400, 120, 170]
"dealer.hole" = [[600, 100], [720, 110], [715, 280], [595, 270]]

[camera.regions.box2.hand1]
card3 = [300, 300, 100, 150]
"""


def _config(**overrides: Any) -> dict[str, Any]:
    mapping: dict[str, Any] = {"source": 0, "resolution": [640, 360], "regions": {}}
    mapping.update(overrides)
    return mapping


def test_a_toml_camera_table_loads_with_nested_and_quoted_positions() -> None:
    config = CameraConfig.from_mapping(tomllib.loads(GOOD_TOML)["camera"])
    assert config.source_kind == "url"
    assert (config.width, config.height, config.fps) == (1280, 720, 30.0)
    assert config.reconnect_initial_s == 0.25
    assert set(config.regions) == {"player1", "dealer.hole", "box2.hand1.card3"}
    assert config.regions["player1"].is_rectangle
    assert config.regions["player1"].bounds == (100, 400, 220, 570)
    assert not config.regions["dealer.hole"].is_rectangle
    # The password never reaches logs or events.
    assert "hunter2" not in config.display_source
    assert config.display_source == "rtsp://studio:***@10.0.0.7:554/table1"


def test_config_round_trips_through_its_own_toml() -> None:
    config = CameraConfig.from_mapping(tomllib.loads(GOOD_TOML)["camera"])
    again = CameraConfig.from_mapping(tomllib.loads(config.to_toml())["camera"])
    assert again == config


@pytest.mark.parametrize(
    ("source", "kind", "value"),
    [
        (0, "v4l2", 0),
        ("2", "v4l2", 2),
        ("/dev/video1", "v4l2", 1),
        ("http://cam.local/mjpeg", "url", "http://cam.local/mjpeg"),
        ("/srv/recordings/table1.mkv", "file", "/srv/recordings/table1.mkv"),
        ("file:///srv/t.avi", "file", "/srv/t.avi"),
    ],
)
def test_sources_are_told_apart(source: object, kind: str, value: object) -> None:
    config = CameraConfig.from_mapping(_config(source=source))
    assert config.source_kind == kind
    assert config.source == value


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"sources": 0}, "unknown key(s) 'sources'"),
        ({"source": None}, "camera.source"),
        ({"source": True}, "camera.source"),
        ({"source": -1}, "V4L2 index is >= 0"),
        ({"source": "ftp://x/y"}, "unsupported URL scheme 'ftp'"),
        ({"source": "rtsp://u:hunter2@[::1/x"}, "malformed URL 'rtsp://u:***@[::1/x'"),
        ({"source": "http://u:hunter2@cam:99999/x"}, "malformed URL 'http://u:***@cam:99999/x'"),
        ({"source": "rtsp://cam:port/x"}, "malformed URL"),
        ({"source": "rtsp:///stream"}, "no host"),
        ({"source": "file://"}, "no file path"),
        ({"resolution": [640]}, "camera.resolution"),
        ({"resolution": ["640", 360]}, "camera.resolution"),
        ({"resolution": [640, 2]}, "camera.resolution"),
        ({"fps": 0}, "camera.fps: expected a positive number"),
        ({"fps": "30"}, "camera.fps"),
        ({"fourcc": "MJPEG"}, "camera.fourcc"),
        ({"reconnect_initial_s": 5, "reconnect_max_s": 1}, "below reconnect_initial_s"),
        ({"timeout_s": -1}, "camera.timeout_s"),
        ({"regions": [1, 2]}, "expected a table of position = region"),
        ({"regions": {"player1": [600, 10, 100, 50]}}, "outside the 640x360 frame"),
        ({"regions": {"player1": [-1, 10, 100, 50]}}, "outside the 640x360 frame"),
        ({"regions": {"player1": [0, 0, 0, 50]}}, "width and height must be positive"),
        ({"regions": {"player1": [0, 0, 10]}}, "expected a rectangle"),
        ({"regions": {"player1": [0, 0, 10.5, 10]}}, "four integers"),
        ({"regions": {"player1": "top-left"}}, "expected a rectangle"),
        ({"regions": {"player 1": [0, 0, 10, 10]}}, "position names"),
        (
            {"regions": {"p": [[0, 0], [0, 10], [10, 10], [10, 0]]}},
            "anticlockwise",
        ),
        (
            {"regions": {"p": [[0, 0], [10, 10], [10, 0], [0, 10]]}},
            "convex",
        ),
        (
            {"regions": {"p": [[0, 0], [700, 0], [700, 10], [0, 10]]}},
            "outside the 640x360 frame",
        ),
    ],
)
def test_bad_config_is_refused_with_a_clear_message(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        CameraConfig.from_mapping(_config(**overrides))
    assert message in str(raised.value)


def test_missing_keys_and_duplicate_positions_are_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"camera\.source is missing"):
        CameraConfig.from_mapping({"resolution": [640, 360]})
    with pytest.raises(ConfigurationError, match=r"camera\.resolution is missing"):
        CameraConfig.from_mapping({"source": 0})
    with pytest.raises(ConfigurationError, match="defined twice"):
        CameraConfig.from_mapping(
            _config(regions={"box1.card1": [0, 0, 5, 5], "box1": {"card1": [0, 0, 5, 5]}})
        )


def test_rectangle_crop_is_exactly_its_pixels_and_scales_with_the_frame() -> None:
    image = np.zeros((360, 640, 3), np.uint8)
    image[100:150, 200:260] = (0, 0, 255)
    region = Region.rectangle("player1", 200, 100, 60, 50)
    crop = crop_region(image, region, 640, 360)
    assert crop.shape == (50, 60, 3)
    assert (crop == (0, 0, 255)).all()
    # The same region on a camera that delivers twice the configured size.
    big = np.zeros((720, 1280, 3), np.uint8)
    big[200:300, 400:520] = (0, 255, 0)
    crop = crop_region(big, region, 640, 360)
    assert crop.shape == (100, 120, 3)
    assert (crop == (0, 255, 0)).all()


def test_quadrilateral_crop_is_warped_upright() -> None:
    image = np.zeros((360, 640, 3), np.uint8)
    corners = np.array([[300, 100], [400, 120], [390, 260], [290, 240]], np.int32)
    import cv2

    cv2.fillConvexPoly(image, corners, (255, 255, 255))
    # Mark the top-left corner of the quadrilateral so the warp's orientation shows.
    cv2.circle(image, (310, 112), 6, (0, 0, 255), -1)
    config = CameraConfig.from_mapping(_config(regions={"p": corners.tolist()}))
    crop = crop_region(image, config.regions["p"], 640, 360)
    height, width = crop.shape[:2]
    assert abs(width - 101) <= 2 and abs(height - 140) <= 2
    # The warped card fills the crop (white), and the red mark sits in its top-left corner.
    assert crop[height // 2, width // 2].tolist() == [255, 255, 255]
    red = np.argwhere((crop[:, :, 2] > 200) & (crop[:, :, 1] < 80))
    assert red.size and red[:, 0].mean() < height / 4 and red[:, 1].mean() < width / 4


def test_card_slots_name_each_card_of_a_rules_hand() -> None:
    assert card_slot("player", 3) == "player.card3"
    assert card_slot("dealer", 1) == "dealer.card1"
    assert card_slot("box2", 2) == "box2.hand1.card2"
    assert card_slot("box2.hand2", 1) == "box2.hand2.card1"
    with pytest.raises(ConfigurationError):
        card_slot("player", 0)
    with pytest.raises(ConfigurationError):
        card_slot("box 2", 1)
