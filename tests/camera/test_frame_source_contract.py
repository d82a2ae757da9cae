"""The same contract over every frame source the daemon can be given: the capture thread over
a video file, the capture thread over an HTTP URL, and the in-process camera simulator."""

from __future__ import annotations

import functools
import http.server
import logging
import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from controller.kernel.cards import parse_card
from controller.kernel.errors import ConfigurationError
from drivers.camera import CameraCapture, FrameSource
from drivers.camera_events import CameraEvent, CameraOffline, CameraOnline
from simulators.camera import SimulatedCamera
from tests.camera.conftest import failed_retries
from tests.support.wait import wait_until

TIMEOUT_S = 10.0
POSITION = "banker.card1"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class FileServer:
    """A real HTTP server on a loopback port serving one directory; restartable."""

    def __init__(self, directory: Path) -> None:
        self._handler = functools.partial(_QuietHandler, directory=str(directory))
        self.port = 0
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self._handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-http")
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
            self._server = self._thread = None


def _simulated_round(tmp_path: Path) -> tuple[SimulatedCamera, Path]:
    simulator = SimulatedCamera("baccarat", "anglo", seed=21, width=640, height=360)
    simulator.deal(POSITION, parse_card("6H"))
    return simulator, simulator.write_video(tmp_path / "round.avi", frames=20, fps=50)


@pytest.fixture(params=["capture-file", "capture-http", "simulator"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FrameSource]:
    simulator, video = _simulated_round(tmp_path)
    if request.param == "simulator":
        simulator.start()
        yield simulator
        simulator.stop()
        return
    server = None
    url: str = str(video)
    if request.param == "capture-http":
        server = FileServer(tmp_path)
        server.start()
        url = f"http://127.0.0.1:{server.port}/round.avi"
    camera = CameraCapture(simulator.camera_config(url, timeout_s=2.0, reconnect_initial_s=0.05))
    camera.start()
    try:
        yield camera
    finally:
        camera.stop()
        if server is not None:
            server.stop()


def test_frames_are_numbered_read_only_and_of_the_configured_size(source: FrameSource) -> None:
    first = source.wait_for_frame(timeout=TIMEOUT_S)
    assert first is not None and first.number >= 1
    newer = source.wait_for_frame(newer_than=first.number, timeout=TIMEOUT_S)
    assert newer is not None and newer.number > first.number
    latest = source.latest()
    assert latest is not None and latest.number >= newer.number
    assert latest.image.shape == (360, 640, 3) and latest.image.dtype == np.uint8
    assert not latest.image.flags.writeable


def test_the_region_of_a_dealt_card_shows_the_card(source: FrameSource) -> None:
    frame = source.wait_for_frame(timeout=TIMEOUT_S)
    assert frame is not None
    crop = source.region(POSITION, frame)
    assert crop.position == POSITION and crop.number == frame.number
    hsv = cv2.cvtColor(crop.image, cv2.COLOR_BGR2HSV)
    paper = ((hsv[:, :, 1] < 60) & (hsv[:, :, 2] > 150)).mean()
    assert paper > 0.15
    empty = source.region("player.card3", frame)
    felt = cv2.cvtColor(empty.image, cv2.COLOR_BGR2HSV)
    assert ((felt[:, :, 1] < 60) & (felt[:, :, 2] > 150)).mean() < paper / 3
    with pytest.raises(ConfigurationError, match="no camera region"):
        source.region("box1.hand1.card1")
    assert set(source.regions) >= {POSITION, "player.card1"}


def test_an_http_camera_that_goes_away_and_comes_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="drivers.camera")
    _, _video = _simulated_round(tmp_path)
    server = FileServer(tmp_path)
    server.start()
    url = f"http://127.0.0.1:{server.port}/round.avi"
    simulator = SimulatedCamera("baccarat", "anglo", seed=21, width=640, height=360)
    config = simulator.camera_config(url, timeout_s=2.0, reconnect_initial_s=0.05)
    events: queue.Queue[CameraEvent] = queue.Queue()
    camera = CameraCapture(config, events.put)
    camera.start()
    try:
        assert isinstance(events.get(timeout=TIMEOUT_S), CameraOnline)
        server.stop()
        # The served file ends (a finite file over HTTP) or the connection drops; reopening
        # then finds nobody listening, and the outage is reported once.
        last = events.get(timeout=TIMEOUT_S)
        while not isinstance(last, CameraOffline):
            last = events.get(timeout=TIMEOUT_S)
        # One report for the outage, checked once reopening has failed twice after it.
        wait_until(lambda: failed_retries(caplog) >= 2, TIMEOUT_S, "two failed reconnections")
        while not events.empty():
            extra = events.get_nowait()
            assert not isinstance(extra, CameraOffline), "one outage, reported twice"
        assert f"127.0.0.1:{server.port}" in last.source
        assert not camera.online and camera.latest() is None
        server.start()  # the same port again
        back = events.get(timeout=TIMEOUT_S)
        while not isinstance(back, CameraOnline):
            back = events.get(timeout=TIMEOUT_S)
        assert (back.width, back.height) == (640, 360)
        assert camera.wait_for_frame(timeout=TIMEOUT_S) is not None
    finally:
        camera.stop()
        server.stop()
