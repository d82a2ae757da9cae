"""Helpers for the camera tests: real video files written with OpenCV."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest


def write_video(path: Path, frames: Iterable[np.ndarray], fps: float = 50.0) -> int:
    """Write BGR ``frames`` to ``path`` (lossless FFV1 in .mkv, MJPG in .avi); frame count."""
    import cv2

    frames = list(frames)
    height, width = frames[0].shape[:2]
    fourcc = "FFV1" if path.suffix == ".mkv" else "MJPG"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), fps, (width, height))
    assert writer.isOpened(), f"OpenCV cannot write {path}"
    try:
        for frame in frames:
            writer.write(frame)
    finally:
        writer.release()
    return len(frames)


def numbered_frames(count: int, width: int = 160, height: int = 120) -> list[np.ndarray]:
    """Frames whose mean grey level encodes their index (10, 20, 30, ...)."""
    return [np.full((height, width, 3), 10 * (i + 1), np.uint8) for i in range(count)]


def failed_retries(caplog: pytest.LogCaptureFixture) -> int:
    """How many attempts to reopen a camera have failed since its outage was reported.

    Only the first failure is an event (``CameraOffline``); the capture thread logs each one
    after it at DEBUG, so a test that captures ``drivers.camera`` at DEBUG can wait for them
    before checking that no second ``CameraOffline`` came.
    """
    return sum("still offline" in record.getMessage() for record in caplog.records)
