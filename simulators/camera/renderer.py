"""The simulated camera's pixels: the felt, the cards laid on it, a real camera's flaws.

:class:`Renderer` draws what a camera above the table would see: a felt with the game's
printed layout, every card dealt lying at its position, and the imperfections of a real
picture — each card turned up to ±20° and shifted off its spot (so neighbouring cards
overlap), the camera's perspective, card size, blur, sensor noise, brightness and white
balance, glare from the studio lights, and the compression of a video stream
(:class:`Perturbations` says how much of each). It keeps no record of the cards: the
simulated camera does, and asks for a card's placement, the composite and each picture.

Everything is deterministic given the seed: the scene (felt, light, glare, camera angle)
from the seed, each card's placement from the seed and its deal number, each picture's noise
from the seed and the frame number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

import numpy as np

from controller.kernel.cards import Card
from controller.kernel.errors import ConfigurationError
from drivers.camera import Region, require_cv2
from simulators.camera.layout import CARD_ASPECT, Spot, TableLayout
from vision import artwork

CardFaces = Callable[[Card, int], np.ndarray]
"""A card face provider: ``(card, height_px) -> image`` (BGRA with the card's outline as
alpha, or BGR filling the whole card)."""

# Each frame's sensor noise is a window of one noise field this much larger than the frame.
_NOISE_PAD: Final = 64


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
    artwork.design_path(design)  # fails now, with the reason, for an unknown or reserved design

    def faces(card: Card, height_px: int) -> np.ndarray:
        return artwork.render_card_bgra(design, card, height_px)

    return faces


def card_back(height: int) -> np.ndarray:
    """A plain patterned card back (BGRA), for cards dealt face down."""
    cv2 = require_cv2()
    width = round(height * CARD_ASPECT)
    image = np.full((height, width, 3), 255, np.uint8)
    border = max(2, round(width * 0.07))
    inner = image[border : height - border, border : width - border]
    inner[:] = (40, 30, 150)
    step = max(4, round(width * 0.12))
    for offset in range(-height, width + height, step):
        cv2.line(inner, (offset, 0), (offset + height, height), (90, 80, 210), 1, cv2.LINE_AA)
        cv2.line(inner, (offset, height), (offset + height, 0), (90, 80, 210), 1, cv2.LINE_AA)
    return np.dstack([image, artwork.rounded_card_alpha(height, width)])


# The renderer.


@dataclass(slots=True)
class PlacedCard:
    """A card lying on the table: where, which, which way up, and how it is seen."""

    position: str
    card: Card
    face_down: bool
    matrix: np.ndarray  # 3x3: face pixels -> frame pixels


@dataclass(frozen=True, slots=True)
class _Scene:
    homography: np.ndarray  # table top view -> frame
    background: np.ndarray  # float32 BGR, the felt as the camera sees it
    illumination: np.ndarray  # float32 HxWx3: brightness x white balance x uneven lighting
    glare: np.ndarray | None  # float32 HxWx3, added white; None without glare
    blur_sigma: float
    noise_sigma: float
    noise_bank: np.ndarray | None  # float32 standard normal, a little larger than a frame


class Renderer:
    """The pictures of one simulated table: ``layout`` seen through a camera that strays by
    ``perturbations``, with card faces from ``faces``, all drawn from ``seed``.

    :attr:`regions` is every position's region in the frame: it holds that position's card,
    however the card was perturbed (quadrilaterals when the camera looks at an angle).
    """

    def __init__(
        self, layout: TableLayout, perturbations: Perturbations, faces: CardFaces, seed: int
    ) -> None:
        self._layout = layout
        self._perturbations = perturbations
        self._faces = faces
        self._seed = seed
        self._face_cache: dict[tuple[Card, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._scene = self._build_scene()
        self.regions: Mapping[str, Region] = MappingProxyType(self._build_regions())

    def picture(self, composite: np.ndarray, number: int) -> np.ndarray:
        """Picture ``number`` of the table laid out as ``composite`` (from :meth:`compose`):
        the light, glare, blur, sensor noise and compression of a real camera (read-only)."""
        cv2 = require_cv2()
        rng = np.random.default_rng([self._seed, 2, number])
        scene = self._scene
        # Lights flicker by about 1 % from frame to frame.
        image = composite * (scene.illumination * np.float32(1.0 + rng.normal(0.0, 0.01)))
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
        return pixels

    def compose(self, cards: Sequence[PlacedCard]) -> np.ndarray:
        """The felt with every card laid in deal order (later cards on top), float32 BGR."""
        cv2 = require_cv2()
        canvas = self._scene.background.copy()
        height, width = canvas.shape[:2]
        shadow_shift = self._shadow_shift()
        for placed in cards:
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

    def place(self, spot: Spot, deal_number: int) -> np.ndarray:
        """Where the ``deal_number``-th card dealt lies when dealt to ``spot``: face pixels
        -> frame pixels, perturbed from the seed and the deal number alone."""
        return self._card_matrix(spot, np.random.default_rng([self._seed, 1, deal_number]))

    def _build_scene(self) -> _Scene:
        cv2 = require_cv2()
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
        cv2 = require_cv2()
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
            alpha = artwork.rounded_card_alpha(image.shape[0], image.shape[1])
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

    def _shadow_shift(self) -> int:
        return max(1, round(self._layout.card_height * 0.02))

    def _build_regions(self) -> dict[str, Region]:
        """Each spot's region: the square that holds its card under any allowed perturbation,
        seen through the camera."""
        cv2 = require_cv2()
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
