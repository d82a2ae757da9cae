"""Every region drawn on a frame, for an engineer to check (``livetable camera calibrate``)."""

from __future__ import annotations

from typing import Final

import numpy as np

from drivers.camera.config import CameraConfig
from drivers.camera.frames import require_cv2

# Distinct BGR colours for neighbouring regions, bright enough to see on green felt.
_REGION_COLOURS: Final = (
    (0, 255, 255),
    (255, 0, 255),
    (255, 255, 0),
    (0, 128, 255),
    (255, 128, 0),
    (128, 0, 255),
    (0, 0, 255),
    (255, 255, 255),
)


def draw_regions(image: np.ndarray, config: CameraConfig, caption: str | None = None) -> np.ndarray:
    """A copy of ``image`` with every region outlined and named, for an engineer to check.

    Regions are scaled when the frame's size differs from the configured resolution, exactly
    as the crops are. ``caption`` goes on a bar along the top edge.
    """
    cv2 = require_cv2()
    canvas = np.ascontiguousarray(image.copy())
    frame_height, frame_width = canvas.shape[:2]
    sx, sy = frame_width / config.width, frame_height / config.height
    # Line width and text size follow the frame, so a 4K snapshot stays readable.
    unit = max(1, round(min(frame_width, frame_height) / 360))
    font_scale = 0.4 * unit
    if caption:
        # First, so that outlines and labels near the top edge are drawn over the bar.
        (_, text_height), baseline = cv2.getTextSize(
            caption, cv2.FONT_HERSHEY_SIMPLEX, font_scale, unit
        )
        bar = text_height + baseline + 4 * unit
        canvas[:bar] = (canvas[:bar] * 0.35).astype(np.uint8)
        cv2.putText(
            canvas,
            caption,
            (2 * unit, text_height + 2 * unit),
            cv2.FONT_HERSHEY_SIMPLEX,
            font_scale,
            (255, 255, 255),
            unit,
            cv2.LINE_AA,
        )
    for index, (name, region) in enumerate(sorted(config.regions.items())):
        colour = _REGION_COLOURS[index % len(_REGION_COLOURS)]
        corners = np.array(
            [(round(x * sx), round(y * sy)) for x, y in region.corners], dtype=np.int32
        )
        cv2.polylines(canvas, [corners], True, colour, unit, cv2.LINE_AA)
        (text_width, text_height), baseline = cv2.getTextSize(
            name, cv2.FONT_HERSHEY_SIMPLEX, font_scale, unit
        )
        x0, y0 = int(corners[:, 0].min()), int(corners[:, 1].min())
        # The label sits just above the region, or just inside it at the top edge.
        label_y = (
            y0 - baseline - unit
            if y0 - text_height - baseline - 2 * unit >= 0
            else (y0 + text_height + unit)
        )
        label_x = min(max(x0, 0), max(0, frame_width - text_width))
        cv2.rectangle(
            canvas,
            (label_x, label_y - text_height - unit),
            (label_x + text_width, label_y + baseline),
            (0, 0, 0),
            -1,
        )
        cv2.putText(
            canvas,
            name,
            (label_x, label_y),
            cv2.FONT_HERSHEY_SIMPLEX,
            font_scale,
            colour,
            unit,
            cv2.LINE_AA,
        )
    return canvas
