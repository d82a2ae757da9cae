"""The capture thread on real video files: latest frame, region crops, reconnect, clean stop."""

from __future__ import annotations

import logging
import queue
import re
import time
from pathlib import Path

import numpy as np
import pytest

from controller.kernel.errors import ConfigurationError, DeviceError
from drivers.camera import CameraCapture, CameraConfig
from drivers.camera_events import CameraEvent, CameraOffline, CameraOnline
from tests.camera.conftest import failed_retries, numbered_frames, write_video
from tests.support.wait import wait_for_item, wait_until

TIMEOUT_S = 10.0


def _next_event(events: queue.Queue[CameraEvent], kind: type) -> CameraEvent:
    """The next event of ``kind`` on ``events``; the events of other kinds before it are
    taken off and dropped."""
    return wait_for_item(
        events,
        lambda event: isinstance(event, kind),
        TIMEOUT_S,
        f"the capture's next {kind.__name__}",
    )


def _config(path: Path, **extra: object) -> CameraConfig:
    mapping: dict[str, object] = {
        "source": str(path),
        "resolution": [160, 120],
        "reconnect_initial_s": 0.05,
        "reconnect_max_s": 0.4,
        "timeout_s": 2.0,
        "regions": {"player1": [20, 30, 40, 50]},
    }
    mapping.update(extra)
    return CameraConfig.from_mapping(mapping)


def test_capture_keeps_the_latest_frame_of_a_video_file(tmp_path: Path) -> None:
    video = tmp_path / "table.mkv"
    frames = numbered_frames(20)
    for frame in frames[10:]:
        frame[30:80, 20:60] = (255, 255, 255)  # a "card" in player1 from frame 11 on
    write_video(video, frames, fps=50)
    events: queue.Queue[CameraEvent] = queue.Queue()
    with CameraCapture(_config(video), events.put) as camera:
        online = _next_event(events, CameraOnline)
        assert isinstance(online, CameraOnline)
        assert (online.width, online.height) == (160, 120)
        first = camera.wait_for_frame(timeout=TIMEOUT_S)
        assert first is not None
        later = camera.wait_for_frame(newer_than=first.number + 5, timeout=TIMEOUT_S)
        assert later is not None and later.number > first.number + 5
        assert later.at >= first.at
        # Lossless video: the pixels are exactly what was written, in order (the background
        # grey level is 10 * the index in the file, which replays after its end).
        grey = int(later.image[0, 0, 0])
        assert grey % 10 == 0 and 10 <= grey <= 200
        with pytest.raises(ValueError):
            later.image[0, 0, 0] = 1  # frames are shared: read-only
        card_frame = camera.wait_for_frame(newer_than=later.number, timeout=TIMEOUT_S)
        while card_frame is not None and int(card_frame.image[0, 0, 0]) <= 100:
            card_frame = camera.wait_for_frame(newer_than=card_frame.number, timeout=TIMEOUT_S)
        assert card_frame is not None
        crop = camera.region("player1", card_frame)
        assert crop.image.shape == (50, 40, 3)
        assert (crop.image == 255).all()
        assert crop.number == card_frame.number
        with pytest.raises(ConfigurationError, match="no camera region for position 'banker1'"):
            camera.region("banker1")
    assert not camera.online


def test_capture_reconnects_with_doubling_backoff_when_the_file_disappears_and_reappears(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="drivers.camera")
    video = tmp_path / "table.mkv"
    # One second of video: it is still playing when the file is deleted, however slow the
    # machine, so the outage begins at its end.
    write_video(video, numbered_frames(10), fps=10)
    events: queue.Queue[CameraEvent] = queue.Queue()
    with CameraCapture(_config(video), events.put) as camera:
        assert isinstance(_next_event(events, CameraOnline), CameraOnline)
        last_before = camera.wait_for_frame(timeout=TIMEOUT_S)
        assert last_before is not None
        video.unlink()
        # The open file plays to its end; then the source is gone and stays gone.
        offline = _next_event(events, CameraOffline)
        assert isinstance(offline, CameraOffline)
        assert offline.reason == "end of the video file"
        assert camera.latest() is None
        with pytest.raises(DeviceError, match="no frame"):
            camera.region("player1")
        # Only one CameraOffline for the whole outage, not one per failed retry: checked once
        # the thread has logged three retries that failed after it (the delays checked below).
        wait_until(lambda: failed_retries(caplog) >= 3, TIMEOUT_S, "three failed retries")
        assert not camera.online
        assert events.empty()
        write_video(video, numbered_frames(10), fps=50)
        back = _next_event(events, CameraOnline)
        assert isinstance(back, CameraOnline)
        frame = camera.wait_for_frame(newer_than=last_before.number, timeout=TIMEOUT_S)
        assert frame is not None and frame.number > last_before.number
    delays = [
        float(match.group(1))
        for record in caplog.records
        if (match := re.search(r"does not exist \(next attempt in ([0-9.]+) s\)", record.message))
    ]
    # 0.05 s doubling up to the 0.4 s ceiling: 0.1, 0.2, 0.4, 0.4, ... after the first retry.
    assert len(delays) >= 3
    assert delays[:3] == [0.1, 0.2, 0.4]
    assert all(delay == 0.4 for delay in delays[3:])


def test_a_source_that_cannot_be_opened_is_reported_offline_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="drivers.camera")
    events: queue.Queue[CameraEvent] = queue.Queue()
    with CameraCapture(_config(tmp_path / "missing.mkv"), events.put) as camera:
        offline = _next_event(events, CameraOffline)
        assert isinstance(offline, CameraOffline)
        assert "does not exist" in offline.reason
        assert offline.retry_in_s == 0.05
        wait_until(lambda: failed_retries(caplog) >= 2, TIMEOUT_S, "two failed retries")
        assert camera.wait_for_frame(timeout=0.05) is None  # the file does not exist
        assert not camera.online
    assert events.empty()


def test_a_file_that_is_not_a_video_is_reported_offline(tmp_path: Path) -> None:
    junk = tmp_path / "junk.mkv"
    junk.write_bytes(np.random.default_rng(1).integers(0, 256, 4096, np.uint8).tobytes())
    events: queue.Queue[CameraEvent] = queue.Queue()
    with CameraCapture(_config(junk), events.put):
        offline = _next_event(events, CameraOffline)
        assert isinstance(offline, CameraOffline)
        assert "junk.mkv" in offline.reason


def test_a_camera_delivering_another_size_has_its_regions_scaled(tmp_path: Path) -> None:
    video = tmp_path / "big.mkv"
    frame = np.zeros((240, 320, 3), np.uint8)
    frame[60:160, 40:120] = (0, 200, 0)  # player1 at twice the configured 160x120
    write_video(video, [frame] * 5, fps=50)
    with CameraCapture(_config(video)) as camera:
        crop = camera.region("player1", camera.wait_for_frame(timeout=TIMEOUT_S))
    assert crop.image.shape == (100, 80, 3)
    assert (crop.image[:, :, 1] == 200).all()


def test_stop_is_prompt_and_start_twice_is_refused(tmp_path: Path) -> None:
    video = tmp_path / "table.mkv"
    write_video(video, numbered_frames(5), fps=5)
    camera = CameraCapture(_config(video))
    camera.start()
    try:
        with pytest.raises(DeviceError, match="already started"):
            camera.start()
        assert camera.wait_for_frame(timeout=TIMEOUT_S) is not None
    finally:
        started = time.monotonic()
        camera.stop()
    assert time.monotonic() - started < 3.0
    camera.stop()  # stopping twice is harmless
