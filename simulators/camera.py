"""A camera over a simulated table: the layout, the cards dealt so far, realistic pictures.

:class:`SimulatedCamera` renders what a camera above the table would see: a felt with the
game's printed layout, every card dealt so far lying at its position, and the imperfections
of a real picture — each card turned up to ±20° and shifted off its spot (so neighbouring
cards overlap), the camera's perspective, card size, blur, sensor noise, brightness and white
balance, glare from the studio lights, and the compression of a video stream. Card faces come
from real artwork (:func:`vision.artwork.render_card_bgra`, one chosen design), or from any
provider passed in.

It offers the same interface as the capture side (:class:`drivers.camera.FrameSource`), so
the daemon can run on it in-process, and it publishes the region map of its layout
(:attr:`SimulatedCamera.regions`, :meth:`SimulatedCamera.camera_config`), so a camera config
and the simulator always agree. It writes frames to image files and to a video file that
``cv2.VideoCapture`` reads back, which gives a real-pixels test of the whole capture path.

Everything is deterministic given the seed and the sequence of calls: the scene (felt,
light, glare, camera angle) comes from the seed, each card's placement from the seed and its
deal number, each frame's noise from the seed and the frame number.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import numpy as np

from controller.errors import ConfigurationError, DeviceError
from controller.games.cards import Card
from drivers.camera import CameraConfig, Crop, Frame, Region, crop_region

CardFaces = Callable[[Card, int], np.ndarray]
"""A card face provider: ``(card, height_px) -> image`` (BGRA with the card's outline as
alpha, or BGR filling the whole card)."""

GAMES: Final = ("baccarat", "blackjack-classic", "blackjack-21", "blackjack-boundless")

# A poker-size card is 63 x 88 mm.
CARD_ASPECT: Final = 63.0 / 88.0

# Video containers and the codec each is written with: all of them read back through
# cv2.VideoCapture with the FFmpeg backend that opencv-python-headless ships.
_VIDEO_CODECS: Final = {".avi": "MJPG", ".mkv": "FFV1", ".mp4": "mp4v"}

# Each frame's sensor noise is a window of one noise field this much larger than the frame.
_NOISE_PAD: Final = 64


def _cv2() -> Any:
    import cv2

    return cv2


# Layouts.


@dataclass(frozen=True, slots=True)
class Spot:
    """Where one position's card lies on the table, in pixels of the table's top view.

    ``angle`` is the card's nominal rotation in degrees (90: dealt sideways, as baccarat's
    third cards are).
    """

    position: str
    x: float
    y: float
    angle: float = 0.0


@dataclass(frozen=True, slots=True)
class TableLayout:
    """The table seen from straight above: its size, the card size, every position's spot.

    ``deal_order`` is the order a round normally fills the spots (the order the simulator's
    command line deals a list of cards in); ``labels`` are the words printed on the felt.
    """

    game: str
    width: int
    height: int
    card_height: int
    spots: Mapping[str, Spot]
    deal_order: tuple[str, ...]
    labels: tuple[tuple[str, float, float], ...] = ()

    @property
    def card_width(self) -> int:
        return round(self.card_height * CARD_ASPECT)


def _hand_cascade(prefix: str, x: float, y: float, cards: int, dx: float, dy: float) -> list[Spot]:
    return [
        Spot(f"{prefix}.card{c}", x + (c - 1) * dx, y + (c - 1) * dy) for c in range(1, cards + 1)
    ]


def layout_for(game: str, width: int = 1280, height: int = 720) -> TableLayout:
    """The simulator's layout of ``game`` (see ``docs/camera.md`` for the position names).

    Every position is a card slot named ``<hand>.card<n>``, the hand as the rules name it
    (:func:`drivers.camera.card_slot` maps the rules' position and card number to it):

    * ``baccarat``: ``player.card1``..``player.card3``, ``banker.card1``..``banker.card3``
      (third cards sideways).
    * ``blackjack-classic``: 5 boxes, ``box{b}.hand{h}.card{c}`` (2 hands, 6 cards each).
    * ``blackjack-21``: 7 boxes, ``box{b}.hand{h}.card{c}`` (3 hands, 6 cards each).
    * ``blackjack-boundless``: one shared hand, ``player.card1``..``player.card12``.
    * every blackjack game: ``dealer.card1``..``dealer.card7``.
    """
    if not (160 <= width <= 8192 and 120 <= height <= 8192):
        raise ConfigurationError(f"simulated frame {width}x{height} is outside 160x120..8192x8192")
    spots: list[Spot] = []
    labels: list[tuple[str, float, float]] = []
    if game == "baccarat":
        card_height = round(height * 0.2)
        card_width = card_height * CARD_ASPECT
        # Neighbouring cards are laid a little closer than a card's width: they touch or
        # overlap, as they do when a dealer works quickly.
        pitch = card_width * 0.92
        row = height * 0.48
        for side, centre in (("player", width * 0.3), ("banker", width * 0.7)):
            spots.append(Spot(f"{side}.card1", centre - pitch / 2, row))
            spots.append(Spot(f"{side}.card2", centre + pitch / 2, row))
            spots.append(Spot(f"{side}.card3", centre, row + card_height * 0.95, 90.0))
            labels.append((side.upper(), centre, row - card_height * 0.8))
        order = (
            "player.card1",
            "banker.card1",
            "player.card2",
            "banker.card2",
            "player.card3",
            "banker.card3",
        )
        return TableLayout(game, width, height, card_height, _spot_map(spots), order, tuple(labels))
    boxes, hands, cards = {
        "blackjack-classic": (5, 2, 6),
        "blackjack-21": (7, 3, 6),
        "blackjack-boundless": (1, 1, 12),
    }.get(game, (0, 0, 0))
    if not boxes:
        raise ConfigurationError(f"no camera layout for game {game!r}; known: {', '.join(GAMES)}")
    card_height = round(height * (0.17 if boxes <= 5 else 0.15))
    card_width = card_height * CARD_ASPECT
    # A blackjack hand is a cascade: each card a little right of and above the one before,
    # so every index corner stays in sight.
    dx, dy = card_width * 0.32, -card_height * 0.16
    dealer_y = height * 0.22
    dealer_x = width / 2 - 3 * card_width * 0.55
    spots += [
        Spot(f"dealer.card{c}", dealer_x + (c - 1) * card_width * 0.55, dealer_y)
        for c in range(1, 8)
    ]
    labels.append(("DEALER", width / 2, dealer_y - card_height * 0.7))
    if game == "blackjack-boundless":
        row_y = height * 0.72
        start_x = width / 2 - 5.5 * card_width * 0.55
        spots += [
            Spot(f"player.card{c}", start_x + (c - 1) * card_width * 0.55, row_y)
            for c in range(1, cards + 1)
        ]
        labels.append(("PLAYER", width / 2, row_y + card_height * 0.75))
        order = ("player.card1", "dealer.card1", "player.card2", "dealer.card2")
    else:
        for b in range(1, boxes + 1):
            # Boxes sit on an arc around the dealer, box 1 on the dealer's left (our right).
            fraction = (b - 0.5) / boxes
            box_x = width * (0.93 - 0.86 * fraction)
            box_y = height * (0.62 + 0.16 * math.sin(math.pi * fraction))
            labels.append((str(b), box_x, box_y + card_height * 0.8))
            for h in range(1, hands + 1):
                hand_x = box_x + (h - (hands + 1) / 2) * card_width * 0.8
                spots += _hand_cascade(f"box{b}.hand{h}", hand_x, box_y, cards, dx, dy)
        # Each box's first card, the dealer's first, each box's second, the dealer's second
        # (which of the dealer's two is the face-down hole card depends on the game).
        first = [f"box{b}.hand1.card1" for b in range(1, boxes + 1)]
        second = [f"box{b}.hand1.card2" for b in range(1, boxes + 1)]
        order = (*first, "dealer.card1", *second, "dealer.card2")
    return TableLayout(game, width, height, card_height, _spot_map(spots), order, tuple(labels))


def _spot_map(spots: Sequence[Spot]) -> Mapping[str, Spot]:
    return MappingProxyType({spot.position: spot for spot in spots})


# Perturbations.


@dataclass(frozen=True, slots=True)
class Perturbations:
    """How far a simulated picture strays from the ideal; each value is the most it strays.

    Per card (fixed while the card lies there): ``rotation_deg`` from its spot's angle,
    ``offset`` off its spot as a fraction of the card's width, ``scale`` bigger or smaller.
    Per scene (from the seed, as a mounted camera and the studio lights are fixed):
    ``tilt`` of the camera (the table's far edge narrowed by up to that fraction),
    ``blur_sigma``, ``brightness`` (gain 1 ± it), ``white_balance`` (each channel's gain
    1 ± it), ``glare`` (chance of each of up to two bright reflections). Per frame:
    ``noise_sigma`` grey levels of sensor noise, and JPEG compression at a quality drawn from
    ``jpeg_quality`` (``None``: no compression).
    """

    rotation_deg: float = 20.0
    offset: float = 0.08
    scale: float = 0.08
    tilt: float = 0.10
    blur_sigma: float = 1.2
    brightness: float = 0.25
    white_balance: float = 0.12
    glare: float = 0.6
    noise_sigma: float = 6.0
    jpeg_quality: tuple[int, int] | None = (70, 95)

    @classmethod
    def none(cls) -> Perturbations:
        """A perfect camera straight above a perfectly dealt table."""
        return cls(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, None)


# Card faces.


def artwork_faces(design: str) -> CardFaces:
    """Faces of ``design`` from Debian's card artwork (the reserved design is refused)."""
    from vision import artwork

    artwork.design_path(design)  # fails now, with the reason, for an unknown or reserved design

    def faces(card: Card, height_px: int) -> np.ndarray:
        return artwork.render_card_bgra(design, card, height_px)

    return faces


def rounded_card_alpha(height: int, width: int) -> np.ndarray:
    """The outline of a card ``height`` x ``width`` with rounded corners, as an alpha mask."""
    cv2 = _cv2()
    alpha = np.zeros((height, width), np.uint8)
    radius = max(2, round(width * 0.06))
    cv2.rectangle(alpha, (radius, 0), (width - 1 - radius, height - 1), 255, -1)
    cv2.rectangle(alpha, (0, radius), (width - 1, height - 1 - radius), 255, -1)
    for cx, cy in (
        (radius, radius),
        (width - 1 - radius, radius),
        (radius, height - 1 - radius),
        (width - 1 - radius, height - 1 - radius),
    ):
        cv2.circle(alpha, (cx, cy), radius, 255, -1, cv2.LINE_AA)
    return alpha


def card_back(height: int) -> np.ndarray:
    """A plain patterned card back (BGRA), for cards dealt face down."""
    cv2 = _cv2()
    width = round(height * CARD_ASPECT)
    image = np.full((height, width, 3), 255, np.uint8)
    border = max(2, round(width * 0.07))
    inner = image[border : height - border, border : width - border]
    inner[:] = (40, 30, 150)
    step = max(4, round(width * 0.12))
    for offset in range(-height, width + height, step):
        cv2.line(inner, (offset, 0), (offset + height, height), (90, 80, 210), 1, cv2.LINE_AA)
        cv2.line(inner, (offset, height), (offset + height, 0), (90, 80, 210), 1, cv2.LINE_AA)
    return np.dstack([image, rounded_card_alpha(height, width)])


# The camera.


@dataclass(slots=True)
class _Placed:
    position: str
    card: Card
    face_down: bool
    matrix: np.ndarray  # 3x3: face pixels -> frame pixels


@dataclass(slots=True)
class _Scene:
    homography: np.ndarray  # table top view -> frame
    background: np.ndarray  # float32 BGR, the felt as the camera sees it
    illumination: np.ndarray  # float32 HxWx3: brightness x white balance x uneven lighting
    glare: np.ndarray | None  # float32 HxWx3, added white; None without glare
    blur_sigma: float
    noise_sigma: float
    noise_bank: np.ndarray | None  # float32 standard normal, a little larger than a frame
    cards: list[_Placed] = field(default_factory=list)


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
        self._faces = faces
        self._seed = seed
        self._layout = layout or layout_for(game, width, height)
        self._perturbations = perturbations if perturbations is not None else Perturbations()
        self._fps = fps
        self._clock = clock
        self._face_cache: dict[tuple[Card, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._deals = 0
        # The daemon may crop from one thread while a scenario deals from another.
        self._lock = threading.RLock()
        self._frame_number = 0
        self._latest: Frame | None = None
        self._changed = True
        self._composite: np.ndarray | None = None
        self._scene = self._build_scene()
        self._regions = MappingProxyType(self._build_regions())

    # FrameSource.

    @property
    def layout(self) -> TableLayout:
        return self._layout

    @property
    def regions(self) -> Mapping[str, Region]:
        """Every position's region in the frame: it holds that position's card, however the
        card was perturbed (quadrilaterals when the camera looks at an angle)."""
        return self._regions

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
        region = self._regions.get(position)
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
            self._scene.cards.append(_Placed(position, card, face_down, self._place(spot)))
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
            self._scene.cards.remove(placed)
            placed.position, placed.matrix = target, self._place(spot)
            self._scene.cards.append(placed)
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
            self._scene.cards.clear()
            self._changed = True

    def dealt(self) -> dict[str, Card]:
        """The cards on the table by position."""
        with self._lock:
            return {placed.position: placed.card for placed in self._scene.cards}

    def camera_config(self, source: int | str, **settings: Any) -> CameraConfig:
        """The camera config that reads this simulator's frames from ``source`` (a video file
        it wrote, say): its resolution and region map, plus any other ``[camera]`` settings."""
        mapping: dict[str, Any] = {
            "source": source,
            "resolution": [self._layout.width, self._layout.height],
            "regions": {name: region.to_config() for name, region in self._regions.items()},
        }
        mapping.update(settings)
        return CameraConfig.from_mapping(mapping)

    # Pictures.

    def next_frame(self) -> Frame:
        """Take a new picture of the table as it is now."""
        with self._lock:
            return self._take_picture()

    def _take_picture(self) -> Frame:
        cv2 = _cv2()
        if self._changed or self._composite is None:
            self._composite = self._compose()
            self._changed = False
        self._frame_number += 1
        rng = np.random.default_rng([self._seed, 2, self._frame_number])
        scene = self._scene
        # Lights flicker by about 1 % from frame to frame.
        image = self._composite * (scene.illumination * np.float32(1.0 + rng.normal(0.0, 0.01)))
        if scene.glare is not None:
            image += scene.glare
        if scene.blur_sigma > 0.05:
            image = cv2.GaussianBlur(image, (0, 0), scene.blur_sigma)
        if scene.noise_bank is not None:
            # A window of the scene's noise at a random offset, with a random sign: drawing a
            # frame's worth of normal numbers afresh would cost more than all the rest.
            dy, dx = (int(v) for v in rng.integers(0, _NOISE_PAD, 2))
            height, width = image.shape[:2]
            sign = np.float32(scene.noise_sigma if rng.random() < 0.5 else -scene.noise_sigma)
            image += scene.noise_bank[dy : dy + height, dx : dx + width] * sign
        pixels = np.clip(image + 0.5, 0, 255).astype(np.uint8)
        quality = self._perturbations.jpeg_quality
        if quality is not None:
            chosen = int(rng.integers(quality[0], quality[1] + 1))
            ok, encoded = cv2.imencode(".jpg", pixels, [cv2.IMWRITE_JPEG_QUALITY, chosen])
            if ok:
                pixels = cv2.imdecode(encoded, cv2.IMREAD_COLOR)
        pixels.flags.writeable = False
        at = self._clock() if self._clock is not None else self._frame_number / self._fps
        self._latest = Frame(pixels, self._frame_number, at)
        return self._latest

    def frames(self, count: int) -> Iterator[Frame]:
        """``count`` new pictures of the table as it is now."""
        for _ in range(count):
            yield self.next_frame()

    def write_frames(self, directory: Path, count: int, prefix: str = "frame") -> list[Path]:
        """Write ``count`` new pictures as ``<prefix>-<number>.png`` files; their paths."""
        cv2 = _cv2()
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

    def _placed(self, position: str) -> _Placed | None:
        return next((p for p in self._scene.cards if p.position == position), None)

    def _place(self, spot: Spot) -> np.ndarray:
        # Each card lying down gets its own perturbation, from the seed and the deal count.
        self._deals += 1
        return self._card_matrix(spot, np.random.default_rng([self._seed, 1, self._deals]))

    def _build_scene(self) -> _Scene:
        cv2 = _cv2()
        rng = np.random.default_rng([self._seed, 0])
        p = self._perturbations
        layout = self._layout
        width, height = layout.width, layout.height
        # The camera: the table's far (top) edge looks narrower and a little lower.
        tilt = float(rng.uniform(0.0, p.tilt)) if p.tilt > 0 else 0.0
        skew = float(rng.uniform(-0.3, 0.3)) * tilt
        source = np.array([[0, 0], [width, 0], [width, height], [0, height]], np.float32)
        target = np.array(
            [
                [width * (tilt + skew), height * tilt * 0.5],
                [width * (1 - tilt + skew), height * tilt * 0.5],
                [width, height],
                [0, height],
            ],
            np.float32,
        )
        homography = cv2.getPerspectiveTransform(source, target)
        felt = self._felt(rng)
        floor = np.array([30, 32, 36], np.float32)  # beyond the table's edge
        background = cv2.warpPerspective(
            felt,
            homography,
            (width, height),
            flags=cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_CONSTANT,
            borderValue=tuple(float(v) for v in floor),
        )
        brightness = 1.0 + float(rng.uniform(-p.brightness, p.brightness))
        balance = 1.0 + rng.uniform(-p.white_balance, p.white_balance, 3)
        gains = (brightness * balance).astype(np.float32)
        # Light falls off away from the lamp above the table.
        yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
        lamp_x = width * float(rng.uniform(0.3, 0.7))
        lamp_y = height * float(rng.uniform(0.2, 0.6))
        distance = ((xx - lamp_x) / width) ** 2 + ((yy - lamp_y) / height) ** 2
        falloff = float(rng.uniform(0.0, 0.35)) if p.brightness > 0 else 0.0
        light = (1.0 - falloff * np.minimum(distance, 1.0))[:, :, None]
        glare = np.zeros((height, width, 1), np.float32)
        for _ in range(2):
            if p.glare > 0 and rng.random() < p.glare:
                gx, gy = rng.uniform(0.1, 0.9) * width, rng.uniform(0.15, 0.85) * height
                radius = float(rng.uniform(0.03, 0.12)) * width
                strength = float(rng.uniform(60.0, 200.0))
                squash = float(rng.uniform(0.4, 1.0))
                glare[:, :, 0] += strength * np.exp(
                    -(((xx - gx) / radius) ** 2 + ((yy - gy) / (radius * squash)) ** 2)
                )
        blur = float(rng.uniform(0.0, p.blur_sigma)) if p.blur_sigma > 0 else 0.0
        noise = float(rng.uniform(0.3, 1.0)) * p.noise_sigma if p.noise_sigma > 0 else 0.0
        illumination = (light * gains).astype(np.float32)
        bank = None
        if noise > 0:
            shape = (height + _NOISE_PAD, width + _NOISE_PAD, 3)
            bank = np.random.default_rng([self._seed, 4]).standard_normal(shape, dtype=np.float32)
        has_glare = bool(glare.any())
        return _Scene(
            homography,
            background,
            illumination,
            np.repeat(glare, 3, axis=2) if has_glare else None,
            blur,
            noise,
            bank,
        )

    def _felt(self, rng: np.random.Generator) -> np.ndarray:
        cv2 = _cv2()
        layout = self._layout
        width, height = layout.width, layout.height
        colours = [(40, 105, 25), (35, 90, 20), (95, 60, 20), (30, 30, 110)]  # greens, blue, red
        base = np.array(colours[int(rng.integers(len(colours)))], np.float32)
        if self._perturbations.brightness > 0:
            base = base * rng.uniform(0.85, 1.15, 3).astype(np.float32)
        felt = np.empty((height, width, 3), np.float32)
        felt[:] = base
        # Cloth texture: coarse blotches and fine fibres, a few grey levels each.
        coarse = rng.normal(0.0, 4.0, (height // 16 + 1, width // 16 + 1)).astype(np.float32)
        felt += cv2.resize(coarse, (width, height), interpolation=cv2.INTER_CUBIC)[:, :, None]
        felt += rng.normal(0.0, 2.0, (height, width, 1)).astype(np.float32)
        # The printed layout: a faint outline where each hand goes, and the words.
        ink = np.minimum(base * 1.6 + 40, 255)
        # Drawn on an 8-bit mask (OpenCV's text needs one), then printed onto the cloth.
        printed = np.zeros((height, width), np.uint8)
        thickness = max(1, round(height / 360))
        # One outline around the nominal spots of each hand ("box2.hand1", "player", ...).
        areas: dict[str, list[float]] = {}
        for spot in layout.spots.values():
            hand = re.sub(r"(\.card)?\d+$", "", spot.position)
            half_w, half_h = layout.card_width / 2, layout.card_height / 2
            if spot.angle % 180 == 90:
                half_w, half_h = half_h, half_w
            box = [spot.x - half_w, spot.y - half_h, spot.x + half_w, spot.y + half_h]
            area = areas.setdefault(hand, box)
            area[0], area[1] = min(area[0], box[0]), min(area[1], box[1])
            area[2], area[3] = max(area[2], box[2]), max(area[3], box[3])
        pad = layout.card_width * 0.15
        for x0, y0, x1, y1 in areas.values():
            cv2.rectangle(
                printed,
                (round(x0 - pad), round(y0 - pad)),
                (round(x1 + pad), round(y1 + pad)),
                255,
                thickness,
                cv2.LINE_AA,
            )
        for text, x, y in layout.labels:
            scale = height / 720 * 1.1
            (tw, th), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_DUPLEX, scale, 2 * thickness)
            cv2.putText(
                printed,
                text,
                (round(x - tw / 2), round(y + th / 2)),
                cv2.FONT_HERSHEY_DUPLEX,
                scale,
                255,
                2 * thickness,
                cv2.LINE_AA,
            )
        coverage = (printed.astype(np.float32) / 255.0 * 0.8)[:, :, None]
        felt = felt * (1.0 - coverage) + ink * coverage
        return felt

    def _face_height(self) -> int:
        # One render size per layout, a little above the largest card on screen: the warp only
        # ever shrinks it, and the artwork is rasterised once per card.
        return round(self._layout.card_height * (1.0 + self._perturbations.scale) * 1.15)

    def _face(self, card: Card, face_down: bool) -> tuple[np.ndarray, np.ndarray]:
        """The card's face (float32 BGR) and alpha (float32 0..1) at the render size."""
        key = (card, face_down)
        cached = self._face_cache.get(key)
        if cached is not None:
            return cached
        height = self._face_height()
        image = card_back(height) if face_down else self._faces(card, height)
        if image.ndim != 3 or image.shape[2] not in (3, 4):
            raise ConfigurationError(f"the card face provider returned shape {image.shape}")
        if image.shape[2] == 4:
            colour, alpha = image[:, :, :3], image[:, :, 3]
        else:
            colour = image
            alpha = rounded_card_alpha(image.shape[0], image.shape[1])
        result = (colour.astype(np.float32), alpha.astype(np.float32) / 255.0)
        self._face_cache[key] = result
        return result

    def _card_matrix(self, spot: Spot, rng: np.random.Generator) -> np.ndarray:
        """Face pixels -> frame pixels for a card dealt to ``spot``, perturbed by ``rng``."""
        p = self._perturbations
        render_height = self._face_height()
        render_width = round(render_height * CARD_ASPECT)
        card_w = self._layout.card_width
        angle = spot.angle + float(rng.uniform(-p.rotation_deg, p.rotation_deg))
        scale = (
            self._layout.card_height / render_height * (1.0 + float(rng.uniform(-p.scale, p.scale)))
        )
        x = spot.x + float(rng.uniform(-p.offset, p.offset)) * card_w
        y = spot.y + float(rng.uniform(-p.offset, p.offset)) * card_w
        centre = np.array([[1, 0, -render_width / 2], [0, 1, -render_height / 2], [0, 0, 1]])
        radians = math.radians(angle)
        cos, sin = math.cos(radians) * scale, math.sin(radians) * scale
        place = np.array([[cos, -sin, x], [sin, cos, y], [0, 0, 1]])
        return self._scene.homography.astype(np.float64) @ place @ centre

    def _compose(self) -> np.ndarray:
        """The felt with every card laid in deal order (later cards on top), float32 BGR."""
        cv2 = _cv2()
        canvas = self._scene.background.copy()
        height, width = canvas.shape[:2]
        shadow_shift = self._shadow_shift()
        for placed in self._scene.cards:
            colour, alpha = self._face(placed.card, placed.face_down)
            face_h, face_w = alpha.shape
            corners = np.array(
                [[0, 0], [face_w, 0], [face_w, face_h], [0, face_h]], np.float64
            ).reshape(-1, 1, 2)
            projected = cv2.perspectiveTransform(corners, placed.matrix).reshape(-1, 2)
            pad = shadow_shift * 3 + 2
            x0 = max(0, math.floor(projected[:, 0].min()) - pad)
            y0 = max(0, math.floor(projected[:, 1].min()) - pad)
            x1 = min(width, math.ceil(projected[:, 0].max()) + pad)
            y1 = min(height, math.ceil(projected[:, 1].max()) + pad)
            if x1 <= x0 or y1 <= y0:
                continue
            # Warp only into the card's bounding box: a whole-frame warp per card is wasted work.
            to_box = np.array([[1, 0, -x0], [0, 1, -y0], [0, 0, 1]], np.float64) @ placed.matrix
            size = (x1 - x0, y1 - y0)
            warped = cv2.warpPerspective(colour, to_box, size, flags=cv2.INTER_AREA)
            mask = cv2.warpPerspective(alpha, to_box, size, flags=cv2.INTER_LINEAR)[:, :, None]
            box = canvas[y0:y1, x0:x1]
            # A soft shadow on the felt, down and right of the card.
            shadow = cv2.GaussianBlur(mask, (0, 0), shadow_shift)
            if shadow.ndim == 2:
                shadow = shadow[:, :, None]
            shadow = np.roll(shadow, (shadow_shift, shadow_shift), axis=(0, 1))
            box *= 1.0 - 0.45 * shadow
            box[:] = box * (1.0 - mask) + warped * mask
        return canvas

    def _shadow_shift(self) -> int:
        return max(1, round(self._layout.card_height * 0.02))

    def _build_regions(self) -> dict[str, Region]:
        """Each spot's region: the square that holds its card under any allowed perturbation,
        seen through the camera."""
        cv2 = _cv2()
        p = self._perturbations
        layout = self._layout
        card_w, card_h = layout.card_width, layout.card_height
        half_diagonal = math.hypot(card_w, card_h) / 2 * (1.0 + p.scale)
        if p.rotation_deg < 1e-9 and p.scale < 1e-9:
            half_w, half_h = card_w / 2, card_h / 2
        else:
            half_w = half_h = half_diagonal
        # Beyond the card itself: its shadow, the blur's spread and a pixel of rounding.
        margin = p.offset * card_w + 2 * self._shadow_shift() + 3 * p.blur_sigma + 2
        regions: dict[str, Region] = {}
        for name, spot in layout.spots.items():
            hw, hh = half_w, half_h
            if spot.angle % 180 == 90 and hw != hh:
                hw, hh = hh, hw
            x0 = max(0.0, spot.x - hw - margin)
            y0 = max(0.0, spot.y - hh - margin)
            x1 = min(float(layout.width), spot.x + hw + margin)
            y1 = min(float(layout.height), spot.y + hh + margin)
            corners = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float64)
            seen = cv2.perspectiveTransform(corners.reshape(-1, 1, 2), self._scene.homography)
            seen = seen.reshape(-1, 2)
            if np.allclose(self._scene.homography, np.eye(3), atol=1e-9):
                left, top = math.floor(x0), math.floor(y0)
                regions[name] = Region.rectangle(
                    name, left, top, math.ceil(x1) - left, math.ceil(y1) - top
                )
                continue
            # Rounded inwards to 0.1 px, so the region stays inside the frame.
            points = [
                (
                    min(max(round(float(x), 1), 0.0), float(layout.width)),
                    min(max(round(float(y), 1), 0.0), float(layout.height)),
                )
                for x, y in seen
            ]
            regions[name] = Region(name, tuple(points), False)
        return regions


class VideoRecorder:
    """Frames to a video file that ``cv2.VideoCapture`` reads back; a context manager."""

    def __init__(self, path: Path, width: int, height: int, fps: float) -> None:
        cv2 = _cv2()
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
