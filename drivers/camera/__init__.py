"""Camera capture: configuration, per-position regions, a thread that keeps the latest frame.

The camera is the table's fallback reader: when the shoe misreads a card, the controller
crops the region of the position the card was dealt to from the latest frame and asks the
recogniser (``vision/``) what lies there. This package owns the device side only, in four
modules:

* :mod:`~drivers.camera.config`: :class:`CameraConfig`, one frozen dataclass validated by
  :meth:`CameraConfig.from_mapping` (a table's TOML config embeds it as its ``[camera]``
  table; see ``docs/camera.md``), :class:`Region`, a named rectangle or quadrilateral in
  frame pixels, and :func:`card_slot`;
* :mod:`~drivers.camera.frames`: :class:`Frame`, :class:`Crop`, :func:`crop_region` and
  :class:`FrameSource`, the interface the daemon uses, which the camera simulator
  (:mod:`simulators.camera`) offers too;
* :mod:`~drivers.camera.capture`: :class:`CameraCapture`, a capture thread over
  ``cv2.VideoCapture`` (V4L2 index, RTSP/HTTP URL or video file) that keeps only the newest
  frame, reconnects with a doubling back-off and puts :mod:`drivers.camera_events` on the
  controller's queue, and :func:`grab_frame`;
* :mod:`~drivers.camera.drawing`: :func:`draw_regions`, for calibration.

The names are re-exported here, so ``from drivers.camera import CameraConfig`` works. OpenCV
is imported inside the functions that need it (:func:`require_cv2`), never at module level,
so importing the daemon loads OpenCV only when a camera is configured.
"""

from __future__ import annotations

from drivers.camera.capture import CameraCapture, grab_frame
from drivers.camera.config import CameraConfig, Region, card_slot
from drivers.camera.drawing import draw_regions
from drivers.camera.frames import Crop, Frame, FrameSource, crop_region, require_cv2

__all__ = [
    "CameraCapture",
    "CameraConfig",
    "Crop",
    "Frame",
    "FrameSource",
    "Region",
    "card_slot",
    "crop_region",
    "draw_regions",
    "grab_frame",
    "require_cv2",
]
