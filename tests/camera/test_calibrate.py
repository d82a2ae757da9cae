"""``livetable camera calibrate`` on real pixels: the snapshot is written with the regions
drawn, and sources that cannot be opened give a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from controller.tools.cli import main
from tests.camera.conftest import write_video

GREY = 90

CAMERA_TOML = """
[table]
id = "t1"

[camera]
source = "{source}"
resolution = [640, 360]
timeout_s = 1.0

[camera.regions]
player1 = [100, 100, 80, 120]
"banker1" = [[400, 100], [500, 110], [495, 230], [395, 220]]
"""


def _write_config(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "table.toml"
    path.write_text(CAMERA_TOML.format(source=source))
    return path


def test_calibrate_saves_a_snapshot_with_the_regions_drawn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    video = tmp_path / "table.mkv"
    write_video(video, [np.full((360, 640, 3), GREY, np.uint8)] * 3)
    snapshot = tmp_path / "out" / "calibration.png"
    status = main(
        ["camera", "calibrate", "--config", str(_write_config(tmp_path, str(video))),
         "--output", str(snapshot)]
    )  # fmt: skip
    assert status == 0
    printed = capsys.readouterr().out
    assert f"snapshot saved to {snapshot}" in printed
    assert "player1" in printed and "banker1" in printed
    image = cv2.imread(str(snapshot))
    assert image is not None and image.shape == (360, 640, 3)
    changed = np.any(image != GREY, axis=2)
    # The rectangle's four edges are drawn...
    assert changed[150:200, 100].all() and changed[150:200, 180].all()
    assert changed[220, 110:170].all() and changed[100, 110:170].all()
    # ...the quadrilateral's edges too (midpoints of its left and right sides)...
    assert changed[158:163, 395:400].any() and changed[165:172, 495:500].any()
    # ...and the frame is left as it was inside the regions and away from them.
    assert not changed[130:200, 110:170].any()
    assert not changed[140:200, 420:480].any()
    assert not changed[260:, :].any()
    # The labels are written just above each region.
    assert changed[85:99, 100:160].any() and changed[85:99, 400:460].any()


def test_calibrate_from_an_image_file_reports_scaled_regions_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    image_path = tmp_path / "frame.png"
    cv2.imwrite(str(image_path), np.full((720, 1280, 3), GREY, np.uint8))
    snapshot = tmp_path / "calibration.png"
    status = main(
        ["camera", "calibrate", "--config", str(_write_config(tmp_path, "0")),
         "--image", str(image_path), "--output", str(snapshot), "--json"]
    )  # fmt: skip
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["frame"] == [1280, 720]
    assert summary["regions_scaled"] is True
    assert summary["regions"]["player1"] == [100, 100, 80, 120]
    image = cv2.imread(str(snapshot))
    assert image.shape == (720, 1280, 3)
    # player1 doubled: its left edge is now at x = 200, from y = 200 to 440.
    assert np.any(image[250:400, 199:202] != GREY, axis=2).all()
    assert not np.any(image[250:400, 210:350] != GREY)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{tmp}/missing.mkv", "video file {tmp}/missing.mkv does not exist"),
        ("{tmp}/junk.mkv", "OpenCV cannot decode it as a video"),
        ("rtsp://studio:hunter2@127.0.0.1:9/t1", "rtsp://studio:***@127.0.0.1:9/t1: no stream"),
    ],
)
def test_calibrate_explains_a_source_that_cannot_be_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, message: str
) -> None:
    (tmp_path / "junk.mkv").write_bytes(b"not a video at all" * 100)
    snapshot = tmp_path / "calibration.png"
    config = _write_config(tmp_path, source.format(tmp=tmp_path))
    status = main(["camera", "calibrate", "--config", str(config), "--output", str(snapshot)])
    assert status == 1
    error = capsys.readouterr().err
    assert message.format(tmp=tmp_path) in error
    assert "hunter2" not in error
    assert not snapshot.exists()


def test_calibrate_explains_a_bad_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "table.toml"
    config.write_text(
        "[camera]\nsource = 0\nresolution = [640, 360]\nregions = {p = [600, 0, 80, 10]}\n"
    )
    assert main(["camera", "calibrate", "--config", str(config)]) == 1
    assert "outside the 640x360 frame" in capsys.readouterr().err
    config.write_text("[camera\n")
    assert main(["camera", "calibrate", "--config", str(config)]) == 1
    assert "is not valid TOML" in capsys.readouterr().err
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    image = tmp_path / "frame.png"
    cv2.imwrite(str(image), np.zeros((360, 640, 3), np.uint8))
    config.write_text("[camera]\nsource = 0\nresolution = [640, 360]\n")
    command = ["camera", "calibrate", "--config", str(config), "--image", str(image)]
    assert main([*command, "--output", str(blocker / "snap.png")]) == 1
    assert "cannot write the snapshot" in capsys.readouterr().err
    config.write_text("[table]\nid = 't1'\n")
    assert main(["camera", "calibrate", "--config", str(config)]) == 1
    assert "has no [camera] table" in capsys.readouterr().err
