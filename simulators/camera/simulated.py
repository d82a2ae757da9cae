"""A camera above a simulated table, offering :class:`drivers.camera.FrameSource`.

:class:`SimulatedCamera` keeps the cards dealt so far (deal, move, reveal, clear) and takes
pictures of them through its :class:`~simulators.camera.renderer.Renderer`; it writes them
as image files or, through :class:`~simulators.camera.video.VideoRecorder`, as a video file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from controller.kernel.cards import Card
from controller.kernel.errors import ConfigurationError, DeviceError
from drivers.camera import CameraConfig, Crop, Frame, Region, crop_region, require_cv2
from simulators.camera.layout import Spot, TableLayout, layout_for
from simulators.camera.renderer import (
    CardFaces,
    Perturbations,
    PlacedCard,
    Renderer,
    artwork_faces,
)
from simulators.camera.video import VideoRecorder


class SimulatedCamera:
    """A camera above a simulated table, offering :class:`drivers.camera.FrameSource`.

    Deal cards with :meth:`deal`, clear the table with :meth:`clear`; :meth:`latest` shows
    the table as it is now (a new frame whenever the cards changed), :meth:`next_frame`
    always takes a new picture. ``faces`` overrides ``design`` as the source of card faces.
    Frames are stamped with ``clock()`` when given, else with ``number / fps`` seconds.
    """

    def __init__(
        self,
        game: str = "baccarat",
        design: str | None = None,
        *,
        faces: CardFaces | None = None,
        seed: int = 0,
        width: int = 1280,
        height: int = 720,
        perturbations: Perturbations | None = None,
        layout: TableLayout | None = None,
        fps: float = 25.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if seed < 0:
            raise ConfigurationError(f"the simulator's seed is a non-negative integer, got {seed}")
        if not fps > 0:
            raise ConfigurationError(f"the simulator's frame rate must be positive, got {fps}")
        if faces is None:
            if design is None:
                raise ConfigurationError("the camera simulator needs a card design or faces")
            faces = artwork_faces(design)
        self._layout = layout or layout_for(game, width, height)
        self._renderer = Renderer(
            self._layout,
            perturbations if perturbations is not None else Perturbations(),
            faces,
            seed,
        )
        self._fps = fps
        self._clock = clock
        self._deals = 0
        # The daemon may crop from one thread while a scenario deals from another.
        self._lock = threading.RLock()
        self._frame_number = 0
        self._latest: Frame | None = None
        self._changed = True
        self._composite: np.ndarray | None = None
        self._cards: list[PlacedCard] = []

    # FrameSource.

    @property
    def layout(self) -> TableLayout:
        return self._layout

    @property
    def regions(self) -> Mapping[str, Region]:
        """Every position's region in the frame: it holds that position's card, however the
        card was perturbed (quadrilaterals when the camera looks at an angle)."""
        return self._renderer.regions

    def start(self) -> None:
        """Nothing to start: frames are rendered on demand."""

    def stop(self) -> None:
        """Nothing to stop."""

    def __enter__(self) -> SimulatedCamera:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def latest(self) -> Frame:
        """The table as it is now: the last frame, or a new one if the cards changed since."""
        with self._lock:
            if self._latest is None or self._changed:
                return self.next_frame()
            return self._latest

    def wait_for_frame(self, newer_than: int = 0, timeout: float | None = None) -> Frame:
        """A frame numbered above ``newer_than`` (a simulated camera always has the next one)."""
        with self._lock:
            frame = self.latest()
            while frame.number <= newer_than:
                frame = self.next_frame()
            return frame

    def region(self, position: str, frame: Frame | None = None) -> Crop:
        region = self._renderer.regions.get(position)
        if region is None:
            raise ConfigurationError(
                f"no camera region for position {position!r} in the {self._layout.game} layout"
            )
        frame = frame if frame is not None else self.latest()
        image = crop_region(frame.image, region, self._layout.width, self._layout.height)
        return Crop(position, image, frame.number, frame.at)

    # The table.

    def deal(self, position: str, card: Card, face_down: bool = False) -> None:
        """Lay ``card`` at ``position``, on top of any card it overlaps."""
        with self._lock:
            spot = self._spot(position)
            if self._placed(position) is not None:
                raise DeviceError(f"position {position!r} already holds a card")
            self._cards.append(PlacedCard(position, card, face_down, self._place(spot)))
            self._changed = True

    def move(self, source: str, target: str) -> None:
        """Move the card at ``source`` to the empty ``target`` (a split: the second card of
        ``box2.hand1`` becomes ``box2.hand2.card1``); it lands on top, freshly perturbed."""
        with self._lock:
            placed = self._placed(source)
            if placed is None:
                raise DeviceError(f"no card at position {source!r}")
            spot = self._spot(target)
            if self._placed(target) is not None:
                raise DeviceError(f"position {target!r} already holds a card")
            self._cards.remove(placed)
            placed.position, placed.matrix = target, self._place(spot)
            self._cards.append(placed)
            self._changed = True

    def reveal(self, position: str, card: Card) -> None:
        """Turn the face-down card at ``position`` face up (the dealer's hole card)."""
        with self._lock:
            placed = self._placed(position)
            if placed is None:
                raise DeviceError(f"no card at position {position!r}")
            placed.card, placed.face_down = card, False
            self._changed = True

    def clear(self) -> None:
        """Collect every card (the end of a round)."""
        with self._lock:
            self._cards.clear()
            self._changed = True

    def dealt(self) -> dict[str, Card]:
        """The cards on the table by position."""
        with self._lock:
            return {placed.position: placed.card for placed in self._cards}

    def camera_config(self, source: int | str, **settings: Any) -> CameraConfig:
        """The camera config that reads this simulator's frames from ``source`` (a video file
        it wrote, say): its resolution and region map, plus any other ``[camera]`` settings."""
        mapping: dict[str, Any] = {
            "source": source,
            "resolution": [self._layout.width, self._layout.height],
            "regions": {
                name: region.to_config() for name, region in self._renderer.regions.items()
            },
        }
        mapping.update(settings)
        return CameraConfig.from_mapping(mapping)

    # Pictures.

    def next_frame(self) -> Frame:
        """Take a new picture of the table as it is now."""
        with self._lock:
            return self._take_picture()

    def _take_picture(self) -> Frame:
        if self._changed or self._composite is None:
            self._composite = self._renderer.compose(self._cards)
            self._changed = False
        self._frame_number += 1
        pixels = self._renderer.picture(self._composite, self._frame_number)
        at = self._clock() if self._clock is not None else self._frame_number / self._fps
        self._latest = Frame(pixels, self._frame_number, at)
        return self._latest

    def frames(self, count: int) -> Iterator[Frame]:
        """``count`` new pictures of the table as it is now."""
        for _ in range(count):
            yield self.next_frame()

    def write_frames(self, directory: Path, count: int, prefix: str = "frame") -> list[Path]:
        """Write ``count`` new pictures as ``<prefix>-<number>.png`` files; their paths."""
        cv2 = require_cv2()
        directory.mkdir(parents=True, exist_ok=True)
        paths = []
        for frame in self.frames(count):
            path = directory / f"{prefix}-{frame.number:06d}.png"
            if not cv2.imwrite(str(path), frame.image):
                raise DeviceError(f"cannot write {path}")
            paths.append(path)
        return paths

    def open_video(self, path: Path, fps: float | None = None) -> VideoRecorder:
        """A recorder writing this camera's frames to ``path`` (.avi MJPG, .mkv FFV1 lossless,
        .mp4 MPEG-4), readable by ``cv2.VideoCapture``."""
        return VideoRecorder(path, self._layout.width, self._layout.height, fps or self._fps)

    def write_video(self, path: Path, frames: int, fps: float | None = None) -> Path:
        """Write ``frames`` new pictures of the table as it is now to a video file."""
        with self.open_video(path, fps) as video:
            for frame in self.frames(frames):
                video.write(frame)
        return path

    # Inside.

    def _spot(self, position: str) -> Spot:
        spot = self._layout.spots.get(position)
        if spot is None:
            raise ConfigurationError(f"no position {position!r} in the {self._layout.game} layout")
        return spot

    def _placed(self, position: str) -> PlacedCard | None:
        return next((p for p in self._cards if p.position == position), None)

    def _place(self, spot: Spot) -> np.ndarray:
        # Each card lying down gets its own perturbation, from the seed and the deal count.
        self._deals += 1
        return self._renderer.place(spot, self._deals)
