"""The capture thread: ``cv2.VideoCapture`` read continuously, the newest frame kept.

:class:`CameraCapture` reads a V4L2 index, an RTSP/HTTP URL or a video file, reconnects with
a doubling back-off and hands :mod:`drivers.camera_events` to the caller's sink (the table's
``TableRuntime.submit``); :func:`grab_frame` takes one frame for calibration.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np

from controller.kernel.errors import ConfigurationError, DeviceError
from drivers.camera.config import CameraConfig, Region
from drivers.camera.frames import Crop, Frame, crop_region, require_cv2
from drivers.camera_events import CameraEvent, CameraOffline, CameraOnline

logger = logging.getLogger(__name__)

EventSink = Callable[[CameraEvent], None]
"""Where the capture's events go, called on its thread: ``TableRuntime.submit`` in the
table, ``queue.put`` in a tool or a test."""

# When a video file has no usable frame rate in its header, it is replayed at this rate.
_FALLBACK_FILE_FPS: Final = 25.0


class CameraCapture:
    """A capture thread over ``cv2.VideoCapture`` that keeps only the newest frame.

    Reading continuously (rather than on demand) keeps the driver's buffer empty, so the
    frame handed out is the table as it is now, not as it was a few buffered frames ago. On
    any failure the source is released, :class:`~drivers.camera_events.CameraOffline` goes to
    ``sink``, the held frame is dropped and the source is reopened after a delay that
    doubles from ``reconnect_initial_s`` up to ``reconnect_max_s``; each successful reopen
    sends :class:`~drivers.camera_events.CameraOnline`; without a sink (calibration,
    enrolment) they are dropped. A video file is replayed at its frame rate; its end counts
    as the source going away, so it is replayed again after the delay.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        config: CameraConfig,
        sink: EventSink | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._sink = sink
        self._clock = clock
        self._condition = threading.Condition()
        self._latest: Frame | None = None
        self._frame_count = 0
        self._online = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._size_warned = False

    @property
    def config(self) -> CameraConfig:
        return self._config

    @property
    def regions(self) -> Mapping[str, Region]:
        return self._config.regions

    @property
    def online(self) -> bool:
        """Whether the source is open and delivering frames."""
        return self._online

    def start(self) -> None:
        """Start the capture thread (it opens the source itself and keeps retrying)."""
        if self._thread is not None:
            raise DeviceError("camera capture already started")
        # Importing here surfaces a missing OpenCV at start, not inside the thread.
        require_cv2()
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="camera-capture", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the thread and release the source; waits at most about ``timeout_s`` + 1 s."""
        thread = self._thread
        if thread is None:
            return
        self._stopping.set()
        with self._condition:
            self._condition.notify_all()
        thread.join(self._config.timeout_s + 1.0 if timeout is None else timeout)
        if thread.is_alive():
            raise DeviceError(
                f"camera capture of {self._config.display_source} did not stop in time"
            )
        self._thread = None

    def __enter__(self) -> CameraCapture:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def latest(self) -> Frame | None:
        with self._condition:
            return self._latest

    def wait_for_frame(self, newer_than: int = 0, timeout: float | None = None) -> Frame | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._condition:
            while self._latest is None or self._latest.number <= newer_than:
                if self._stopping.is_set():
                    return None
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._condition.wait(remaining)
            return self._latest

    def region(self, position: str, frame: Frame | None = None) -> Crop:
        """``position``'s region from ``frame`` (default: the newest).

        ConfigurationError for a position without a region; DeviceError when there is no
        frame (the camera has not delivered one yet or is offline).
        """
        region = self._config.regions.get(position)
        if region is None:
            raise ConfigurationError(
                f"no camera region for position {position!r}; configured: "
                f"{', '.join(sorted(self._config.regions)) or 'none'}"
            )
        frame = frame if frame is not None else self.latest()
        if frame is None:
            raise DeviceError(f"no frame from camera {self._config.display_source}")
        image = crop_region(frame.image, region, self._config.width, self._config.height)
        return Crop(position, image, frame.number, frame.at)

    # The capture thread.

    def _run(self) -> None:
        delay = self._config.reconnect_initial_s
        offline_reported = False
        while not self._stopping.is_set():
            try:
                capture = _open_capture(self._config)
            except DeviceError as error:
                capture, reason = None, str(error)
            if capture is not None:
                try:
                    reason = self._session(capture)
                except Exception as error:
                    # The thread must outlive whatever a backend throws: log it, reconnect.
                    logger.exception("camera %s capture failed", self._config.display_source)
                    reason = f"capture failed: {error!r}"
                finally:
                    capture.release()
                    self._drop_frame()
                if reason is None:
                    break
                if self._online:
                    self._online = False
                    offline_reported = False
                    delay = self._config.reconnect_initial_s
            if self._stopping.is_set():
                break
            if not offline_reported:
                logger.warning(
                    "camera %s offline: %s (next attempt in %g s)",
                    self._config.display_source,
                    reason,
                    delay,
                )
                self._emit(CameraOffline(self._config.display_source, reason, delay, self._clock()))
                offline_reported = True
            else:
                logger.debug(
                    "camera %s still offline: %s (next attempt in %g s)",
                    self._config.display_source,
                    reason,
                    delay,
                )
            self._stopping.wait(delay)
            delay = min(delay * 2, self._config.reconnect_max_s)
        self._online = False

    def _session(self, capture: Any) -> str | None:
        """Read from an open source until it fails: why it failed, or ``None`` when stopped."""
        ok, image = capture.read()
        if not ok or image is None:
            return "opened but delivered no frame"
        self._store(image)
        height, width = image.shape[:2]
        self._online = True
        logger.info("camera %s online (%dx%d)", self._config.display_source, width, height)
        self._emit(CameraOnline(self._config.display_source, width, height, self._clock()))
        return self._read_loop(capture)

    def _drop_frame(self) -> None:
        # A frame from before a failure may show cards that are gone: never hand it out.
        with self._condition:
            self._latest = None
            self._condition.notify_all()

    def _read_loop(self, capture: Any) -> str | None:
        cv2 = require_cv2()
        paced = self._config.source_kind == "file"
        interval = 0.0
        if paced:
            fps = self._config.fps or capture.get(cv2.CAP_PROP_FPS)
            if not fps or not math.isfinite(fps) or fps <= 0 or fps > 1000:
                fps = _FALLBACK_FILE_FPS
            interval = 1.0 / fps
        next_at = time.monotonic() + interval
        while not self._stopping.is_set():
            if paced:
                # A file would otherwise be read as fast as it decodes; a camera delivers
                # frames at its own rate and read() blocks until the next one.
                if self._stopping.wait(max(0.0, next_at - time.monotonic())):
                    break
                next_at = max(next_at + interval, time.monotonic() - interval)
            try:
                ok, image = capture.read()
            except cv2.error as error:
                return f"read failed: {error}"
            if not ok or image is None:
                return "end of the video file" if paced else "no frame (stream ended or timed out)"
            self._store(image)
        return None

    def _store(self, image: np.ndarray) -> None:
        height, width = image.shape[:2]
        if (width, height) != (self._config.width, self._config.height) and not self._size_warned:
            self._size_warned = True
            logger.warning(
                "camera %s delivers %dx%d frames, configured %dx%d: regions are scaled",
                self._config.display_source,
                width,
                height,
                self._config.width,
                self._config.height,
            )
        image.flags.writeable = False
        with self._condition:
            self._frame_count += 1
            self._latest = Frame(image, self._frame_count, self._clock())
            self._condition.notify_all()

    def _emit(self, event: CameraEvent) -> None:
        if self._sink is not None:
            self._sink(event)


def _open_capture(config: CameraConfig) -> Any:
    """An opened ``cv2.VideoCapture`` on ``config``'s source; DeviceError if it cannot open."""
    cv2 = require_cv2()
    timeout_ms = round(config.timeout_s * 1000)
    if config.source_kind == "v4l2":
        params = [
            cv2.CAP_PROP_FRAME_WIDTH,
            config.width,
            cv2.CAP_PROP_FRAME_HEIGHT,
            config.height,
        ]
        if config.fourcc:
            params += [cv2.CAP_PROP_FOURCC, cv2.VideoWriter_fourcc(*config.fourcc)]
        if config.fps:
            params += [cv2.CAP_PROP_FPS, round(config.fps)]
        # The driver's own queue would hand out old frames; one buffer is all we want.
        params += [cv2.CAP_PROP_BUFFERSIZE, 1]
        try:
            capture = cv2.VideoCapture(config.source, cv2.CAP_V4L2, params)
        except cv2.error as error:
            raise DeviceError(f"cannot open {config.display_source}: {error}") from error
    else:
        if config.source_kind == "file" and not Path(str(config.source)).is_file():
            raise DeviceError(f"video file {config.source} does not exist")
        params = [
            cv2.CAP_PROP_OPEN_TIMEOUT_MSEC,
            timeout_ms,
            cv2.CAP_PROP_READ_TIMEOUT_MSEC,
            timeout_ms,
        ]
        try:
            capture = cv2.VideoCapture(str(config.source), cv2.CAP_FFMPEG, params)
        except cv2.error as error:
            raise DeviceError(f"cannot open {config.display_source}: {error}") from error
    if not capture.isOpened():
        capture.release()
        hint = {
            "v4l2": "check that the device exists and no other program holds it",
            "url": (
                f"no stream within {config.timeout_s:g} s: check the address, the credentials, "
                "the network and that the camera is on"
            ),
            "file": "OpenCV cannot decode it as a video",
        }[config.source_kind]
        raise DeviceError(f"cannot open camera source {config.display_source}: {hint}")
    return capture


def grab_frame(config: CameraConfig) -> np.ndarray:
    """One frame from ``config``'s source, opened and released at once (for calibration).

    DeviceError with the reason when the source cannot be opened or delivers no frame.
    """
    handle = _open_capture(config)
    try:
        # Cameras often deliver a few dark or half-exposed frames while they start up.
        image = None
        for _ in range(5 if config.source_kind != "file" else 1):
            ok, candidate = handle.read()
            if ok and candidate is not None:
                image = candidate
        if image is None:
            raise DeviceError(f"camera source {config.display_source} opened but gave no frame")
        return image
    finally:
        handle.release()
