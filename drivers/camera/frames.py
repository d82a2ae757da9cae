"""What a camera hands out: frames, one position's crop of a frame, and the interface.

:class:`FrameSource` is what the daemon uses; the capture thread
(:class:`~drivers.camera.capture.CameraCapture`) and the camera simulator
(:mod:`simulators.camera`) both offer it. :func:`require_cv2` is the one place OpenCV is
imported from, inside the functions that need it, so importing the daemon loads OpenCV only
when a camera is configured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Protocol

import numpy as np

from controller.kernel.errors import ConfigurationError
from drivers.camera.config import Region


@dataclass(frozen=True, slots=True, eq=False)
class Frame:
    """One picture of the table: BGR pixels (read-only), its number and when it was taken.

    ``number`` counts frames since the source started (1 for the first) and keeps counting
    across reconnects, so a consumer can tell a new frame from one it has already seen.
    """

    image: np.ndarray
    number: int
    at: float


@dataclass(frozen=True, slots=True, eq=False)
class Crop:
    """The pixels of one position's region, cut from frame ``number`` taken at ``at``."""

    position: str
    image: np.ndarray
    number: int
    at: float


def require_cv2() -> ModuleType:
    """The ``cv2`` module; ConfigurationError saying how to install it when it is missing."""
    try:
        import cv2
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ConfigurationError(
            "the camera needs OpenCV, which is not installed: pip install 'livetable[vision]'"
        ) from error
    return cv2


def crop_region(image: np.ndarray, region: Region, width: int, height: int) -> np.ndarray:
    """The pixels of ``region`` (defined in a ``width`` x ``height`` frame) from ``image``.

    A frame of another size has the region scaled to it. A rectangle is a copy of its pixels;
    a quadrilateral is warped to an upright rectangle as wide as its mean top/bottom edge and
    as tall as its mean left/right edge.
    """
    frame_height, frame_width = image.shape[:2]
    if (frame_width, frame_height) != (width, height):
        region = region.scaled(frame_width / width, frame_height / height)
    if region.is_rectangle:
        x0, y0, x1, y1 = region.bounds
        x0, y0 = max(x0, 0), max(y0, 0)
        x1, y1 = min(x1, frame_width), min(y1, frame_height)
        return image[y0:y1, x0:x1].copy()
    cv2 = require_cv2()
    (tlx, tly), (trx, try_), (brx, bry), (blx, bly) = region.corners
    out_width = max(
        1, round((math.dist((tlx, tly), (trx, try_)) + math.dist((blx, bly), (brx, bry))) / 2)
    )
    out_height = max(
        1, round((math.dist((tlx, tly), (blx, bly)) + math.dist((trx, try_), (brx, bry))) / 2)
    )
    source = np.array(region.corners, dtype=np.float32)
    target = np.array(
        [[0, 0], [out_width, 0], [out_width, out_height], [0, out_height]], dtype=np.float32
    )
    matrix = cv2.getPerspectiveTransform(source, target)
    return cv2.warpPerspective(image, matrix, (out_width, out_height), flags=cv2.INTER_LINEAR)


class FrameSource(Protocol):
    """What the daemon needs from a camera; :class:`CameraCapture` and the simulator offer it."""

    @property
    def regions(self) -> Mapping[str, Region]: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def latest(self) -> Frame | None:
        """The newest frame, or ``None`` when there is none (not yet, or the camera is offline)."""
        ...

    def wait_for_frame(self, newer_than: int = 0, timeout: float | None = None) -> Frame | None:
        """The newest frame once its number exceeds ``newer_than``; ``None`` on timeout."""
        ...

    def region(self, position: str, frame: Frame | None = None) -> Crop:
        """``position``'s region cut from ``frame`` (default: the newest)."""
        ...
