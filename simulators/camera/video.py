"""Simulated frames to a video file that ``cv2.VideoCapture`` reads back (the capture path's
real-pixels test)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import numpy as np

from controller.kernel.errors import ConfigurationError, DeviceError
from drivers.camera import Frame, require_cv2

# Video containers and the codec each is written with: all of them read back through
# cv2.VideoCapture with the FFmpeg backend that opencv-python-headless ships.
_VIDEO_CODECS: Final = {".avi": "MJPG", ".mkv": "FFV1", ".mp4": "mp4v"}


class VideoRecorder:
    """Frames to a video file that ``cv2.VideoCapture`` reads back; a context manager."""

    def __init__(self, path: Path, width: int, height: int, fps: float) -> None:
        cv2 = require_cv2()
        codec = _VIDEO_CODECS.get(path.suffix.lower())
        if codec is None:
            raise ConfigurationError(
                f"cannot write video {path}: use one of {', '.join(sorted(_VIDEO_CODECS))}"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        self._size = (width, height)
        self._writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*codec), fps, self._size)
        if not self._writer.isOpened():
            raise DeviceError(f"OpenCV cannot write {codec} video to {path}")
        self.path = path
        self.frames_written = 0

    def write(self, frame: Frame | np.ndarray) -> None:
        image = frame.image if isinstance(frame, Frame) else frame
        if (image.shape[1], image.shape[0]) != self._size:
            raise DeviceError(f"frame of {image.shape[1]}x{image.shape[0]}, video is {self._size}")
        self._writer.write(np.ascontiguousarray(image))
        self.frames_written += 1

    def close(self) -> None:
        self._writer.release()

    def __enter__(self) -> VideoRecorder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
