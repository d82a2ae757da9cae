"""Camera capture: configuration, per-position regions, a thread that keeps the latest frame.

The camera is the table's fallback reader: when the shoe misreads a card, the controller
crops the region of the position the card was dealt to from the latest frame and asks the
recogniser (``vision/``) what lies there. This module owns the device side only:

* :class:`CameraConfig`, one frozen dataclass validated by :meth:`CameraConfig.from_mapping`
  (a table's TOML config embeds it as its ``[camera]`` table; see ``docs/camera.md``);
* :class:`Region`, a named rectangle or quadrilateral in frame pixels;
* :class:`CameraCapture`, a capture thread over ``cv2.VideoCapture`` (V4L2 index, RTSP/HTTP
  URL or video file) that keeps only the newest frame, reconnects with a doubling back-off
  and puts :mod:`drivers.camera_events` on the controller's queue;
* :class:`FrameSource`, the interface the daemon uses, which the camera simulator
  (:mod:`simulators.camera`) offers too.

OpenCV is imported inside the functions that need it, never at module level, so importing
the daemon loads OpenCV only when a camera is configured.
"""

from __future__ import annotations

import logging
import math
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any, Final, Protocol
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from controller.errors import ConfigurationError, DeviceError
from drivers.camera_events import CameraEvent, CameraOffline, CameraOnline

logger = logging.getLogger(__name__)

# Position names are what the table controller calls a place on the layout: "player1",
# "dealer.hole", "box2.hand1.card3". Dots separate levels, as in a TOML dotted key.
_POSITION_NAME: Final = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")

_CONFIG_KEYS: Final = frozenset(
    {
        "source",
        "resolution",
        "fps",
        "fourcc",
        "regions",
        "reconnect_initial_s",
        "reconnect_max_s",
        "timeout_s",
    }
)

# Frame sizes a camera can plausibly deliver; anything else is a typo in the config.
_MIN_SIDE_PX: Final = 16
_MAX_SIDE_PX: Final = 16384

# When a video file has no usable frame rate in its header, it is replayed at this rate.
_FALLBACK_FILE_FPS: Final = 25.0


def _redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***``, for logs and events."""
    try:
        parts = urlsplit(url)
        password, user, hostname, port = parts.password, parts.username, parts.hostname, parts.port
    except ValueError:
        # Malformed (a bad port, an unclosed IPv6 bracket): redact by pattern instead.
        return re.sub(r"(//[^/@:]*:)[^/@]*@", r"\1***@", url)
    if password is None:
        return url
    host = hostname or ""
    if port is not None:
        host = f"{host}:{port}"
    return urlunsplit(parts._replace(netloc=f"{user or ''}:***@{host}"))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def card_slot(position: str, card_number: int) -> str:
    """The region name of the ``card_number``-th card (from 1) of the hand ``position``.

    The rules name hands, not cards (``"player"``, ``"banker"``, ``"dealer"``, ``"box2"``,
    ``"box2.hand1"`` after a split); a camera needs one region per card slot on the felt. The
    convention, which the camera simulator's layouts follow, is ``<hand>.card<n>``, a box's
    unsplit hand being its hand 1: ``card_slot("player", 3) == "player.card3"``,
    ``card_slot("box2", 1) == "box2.hand1.card1"``. After a split the second card moves to
    ``box2.hand2.card1``: the caller counts the cards each hand holds.
    """
    if not _POSITION_NAME.fullmatch(position) or card_number < 1:
        raise ConfigurationError(f"no card slot for card {card_number} of {position!r}")
    if re.fullmatch(r"box\d+", position):
        position += ".hand1"
    return f"{position}.card{card_number}"


@dataclass(frozen=True, slots=True)
class Region:
    """A named area of the frame where one card lies: a rectangle or a quadrilateral.

    ``corners`` go clockwise on screen from the top-left corner, in pixels of the configured
    resolution. A rectangle is cropped as is; a quadrilateral (a card spot seen at an angle)
    is warped to an upright rectangle, so the recogniser sees it as from above.
    """

    name: str
    corners: tuple[tuple[float, float], ...]
    is_rectangle: bool

    @classmethod
    def rectangle(cls, name: str, x: int, y: int, width: int, height: int) -> Region:
        """The axis-aligned rectangle with top-left corner (x, y)."""
        corners = ((x, y), (x + width, y), (x + width, y + height), (x, y + height))
        return cls(name, tuple((float(a), float(b)) for a, b in corners), True)

    @property
    def bounds(self) -> tuple[int, int, int, int]:
        """``(x0, y0, x1, y1)``: the smallest pixel rectangle holding the region."""
        xs = [x for x, _ in self.corners]
        ys = [y for _, y in self.corners]
        return (
            math.floor(min(xs)),
            math.floor(min(ys)),
            math.ceil(max(xs)),
            math.ceil(max(ys)),
        )

    def to_config(self) -> list[Any]:
        """The TOML/JSON value of this region: ``[x, y, w, h]`` or ``[[x, y], ... 4 corners]``."""
        if self.is_rectangle:
            x0, y0, x1, y1 = self.bounds
            return [x0, y0, x1 - x0, y1 - y0]
        return [[_plain_number(x), _plain_number(y)] for x, y in self.corners]

    def scaled(self, sx: float, sy: float) -> Region:
        """The same region in a frame ``sx`` times wider and ``sy`` times taller."""
        return Region(
            self.name, tuple((x * sx, y * sy) for x, y in self.corners), self.is_rectangle
        )


def _plain_number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _region_from_value(name: str, value: object, width: int, height: int) -> Region:
    where = f"camera.regions.{name}"
    if not _POSITION_NAME.fullmatch(name):
        raise ConfigurationError(
            f"{where}: position names are letters, digits, '_' and '-' separated by dots"
        )
    if not isinstance(value, list | tuple) or len(value) != 4:
        raise ConfigurationError(
            f"{where}: expected a rectangle [x, y, width, height] or a quadrilateral "
            f"[[x, y], [x, y], [x, y], [x, y]], got {value!r}"
        )
    if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        x, y, w, h = (int(v) for v in value)
        if w <= 0 or h <= 0:
            raise ConfigurationError(f"{where}: width and height must be positive, got {value!r}")
        region = Region.rectangle(name, x, y, w, h)
    elif all(
        isinstance(p, list | tuple) and len(p) == 2 and all(map(_is_number, p)) for p in value
    ):
        corners = tuple((float(px), float(py)) for px, py in value)
        _check_quadrilateral(where, corners)
        region = Region(name, corners, False)
    else:
        raise ConfigurationError(
            f"{where}: a rectangle is four integers [x, y, width, height]; a quadrilateral is "
            f"four [x, y] number pairs; got {value!r}"
        )
    x0, y0, x1, y1 = region.bounds
    if x0 < 0 or y0 < 0 or x1 > width or y1 > height:
        raise ConfigurationError(
            f"{where}: {value!r} spans x {x0}..{x1}, y {y0}..{y1}, outside the "
            f"{width}x{height} frame"
        )
    return region


def _check_quadrilateral(where: str, corners: tuple[tuple[float, float], ...]) -> None:
    # Cross products of consecutive edges: all positive means convex and clockwise on screen
    # (y grows downwards), which is the order the perspective warp relies on.
    crosses = []
    for i in range(4):
        (ax, ay), (bx, by), (cx, cy) = corners[i], corners[(i + 1) % 4], corners[(i + 2) % 4]
        crosses.append((bx - ax) * (cy - by) - (by - ay) * (cx - bx))
    if all(c < 0 for c in crosses):
        raise ConfigurationError(
            f"{where}: the corners go anticlockwise; list them clockwise from the top-left"
        )
    if not all(c > 0 for c in crosses):
        raise ConfigurationError(
            f"{where}: the four corners do not make a convex quadrilateral "
            f"(list them clockwise from the top-left, no three in a line)"
        )


def _flatten_regions(value: object, prefix: str = "") -> Iterator[tuple[str, object]]:
    """Regions as (dotted name, value); TOML nests ``box2.hand1.card3 = [...]`` as tables."""
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"camera.regions{'.' + prefix if prefix else ''}: expected a table of "
            f"position = region, got {type(value).__name__}"
        )
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise ConfigurationError(f"camera.regions: bad position name {key!r}")
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(item, Mapping):
            yield from _flatten_regions(item, name)
        else:
            yield name, item


def _positive(mapping: Mapping[str, object], key: str, default: float) -> float:
    value = mapping.get(key, default)
    if not _is_number(value) or value <= 0:  # type: ignore[operator]
        raise ConfigurationError(f"camera.{key}: expected a positive number, got {value!r}")
    return float(value)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class CameraConfig:
    """Where frames come from and where each table position lies in them.

    ``source`` is a V4L2 device index (``0`` for ``/dev/video0``), an ``rtsp://`` or
    ``http(s)://`` URL, or a video file path. ``width`` x ``height`` is the resolution asked
    of the camera and the coordinate system of ``regions``; a camera that delivers another
    size has its regions scaled to it. ``fps`` and ``fourcc`` (e.g. ``"MJPG"``, which USB
    cameras need for 720p at 30 fps) are hints for V4L2 devices; a video file is replayed at
    its own frame rate, or ``fps`` when given. ``timeout_s`` bounds opening and each read of a
    network or file source, which also bounds how long :meth:`CameraCapture.stop` can take.
    """

    source: int | str
    width: int
    height: int
    regions: Mapping[str, Region] = field(default_factory=lambda: MappingProxyType({}))
    fps: float | None = None
    fourcc: str | None = None
    reconnect_initial_s: float = 0.5
    reconnect_max_s: float = 30.0
    timeout_s: float = 5.0

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> CameraConfig:
        """Validate the ``[camera]`` table of a table's config; ConfigurationError if unusable."""
        if not isinstance(mapping, Mapping):
            raise ConfigurationError(f"camera: expected a table, got {type(mapping).__name__}")
        unknown = sorted(set(mapping) - _CONFIG_KEYS)
        if unknown:
            raise ConfigurationError(
                f"camera: unknown key(s) {', '.join(map(repr, unknown))}; "
                f"known keys are {', '.join(sorted(_CONFIG_KEYS))}"
            )
        if "source" not in mapping:
            raise ConfigurationError(
                "camera.source is missing: a V4L2 index (0), a URL or a video file path"
            )
        source = _parse_source(mapping["source"])
        if "resolution" not in mapping:
            raise ConfigurationError(
                "camera.resolution is missing: [width, height] in pixels, e.g. [1280, 720]"
            )
        resolution = mapping["resolution"]
        if not (
            isinstance(resolution, list | tuple)
            and len(resolution) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in resolution)
            and all(_MIN_SIDE_PX <= v <= _MAX_SIDE_PX for v in resolution)
        ):
            raise ConfigurationError(
                f"camera.resolution: expected [width, height], two integers in "
                f"{_MIN_SIDE_PX}..{_MAX_SIDE_PX}, got {resolution!r}"
            )
        width, height = int(resolution[0]), int(resolution[1])
        fps = None if "fps" not in mapping else _positive(mapping, "fps", 0.0)
        fourcc = mapping.get("fourcc")
        if fourcc is not None and not (
            isinstance(fourcc, str) and len(fourcc) == 4 and fourcc.isascii()
        ):
            raise ConfigurationError(
                f"camera.fourcc: expected four ASCII characters such as 'MJPG', got {fourcc!r}"
            )
        initial = _positive(mapping, "reconnect_initial_s", 0.5)
        maximum = _positive(mapping, "reconnect_max_s", 30.0)
        if maximum < initial:
            raise ConfigurationError(
                f"camera.reconnect_max_s ({maximum}) is below reconnect_initial_s ({initial})"
            )
        timeout = _positive(mapping, "timeout_s", 5.0)
        regions: dict[str, Region] = {}
        for name, value in _flatten_regions(mapping.get("regions", {})):
            if name in regions:
                raise ConfigurationError(f"camera.regions.{name}: defined twice")
            regions[name] = _region_from_value(name, value, width, height)
        return cls(
            source=source,
            width=width,
            height=height,
            regions=MappingProxyType(regions),
            fps=fps,
            fourcc=fourcc,
            reconnect_initial_s=initial,
            reconnect_max_s=maximum,
            timeout_s=timeout,
        )

    def to_mapping(self) -> dict[str, Any]:
        """The ``[camera]`` table that :meth:`from_mapping` reads back into this config."""
        mapping: dict[str, Any] = {
            "source": self.source,
            "resolution": [self.width, self.height],
        }
        if self.fps is not None:
            mapping["fps"] = self.fps
        if self.fourcc is not None:
            mapping["fourcc"] = self.fourcc
        mapping["reconnect_initial_s"] = self.reconnect_initial_s
        mapping["reconnect_max_s"] = self.reconnect_max_s
        mapping["timeout_s"] = self.timeout_s
        mapping["regions"] = {name: region.to_config() for name, region in self.regions.items()}
        return mapping

    def to_toml(self, section: str = "camera") -> str:
        """This config as TOML text under ``[section]`` (what a table's config file embeds)."""
        mapping = self.to_mapping()
        regions = mapping.pop("regions")
        lines = [f"[{section}]"]
        lines += [f"{key} = {_toml_value(value)}" for key, value in mapping.items()]
        lines += ["", f"[{section}.regions]"]
        lines += [f"{_toml_string(name)} = {_toml_value(value)}" for name, value in regions.items()]
        return "\n".join(lines) + "\n"

    @property
    def source_kind(self) -> str:
        """``"v4l2"``, ``"url"`` or ``"file"``."""
        if isinstance(self.source, int):
            return "v4l2"
        return "url" if "://" in self.source else "file"

    @property
    def display_source(self) -> str:
        """The source as it may be logged: a URL's password is replaced by ``***``."""
        if isinstance(self.source, int):
            return f"/dev/video{self.source}"
        return _redact_url(self.source) if "://" in self.source else self.source

    def with_source(self, source: int | str) -> CameraConfig:
        """The same config reading from another source (the calibration command's override)."""
        return CameraConfig(
            source=_parse_source(source),
            width=self.width,
            height=self.height,
            regions=self.regions,
            fps=self.fps,
            fourcc=self.fourcc,
            reconnect_initial_s=self.reconnect_initial_s,
            reconnect_max_s=self.reconnect_max_s,
            timeout_s=self.timeout_s,
        )


def _parse_source(value: object) -> int | str:
    if isinstance(value, bool):
        raise ConfigurationError(f"camera.source: expected an index, URL or path, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ConfigurationError(f"camera.source: a V4L2 index is >= 0, got {value}")
        return value
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(
            f"camera.source: expected a V4L2 index (0), a URL or a video file path, got {value!r}"
        )
    text = value.strip()
    if text.isdigit():
        return int(text)
    if text.startswith("/dev/video") and text.removeprefix("/dev/video").isdigit():
        return int(text.removeprefix("/dev/video"))
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        if scheme not in {"rtsp", "rtsps", "http", "https", "file"}:
            raise ConfigurationError(
                f"camera.source: unsupported URL scheme {scheme!r} in "
                f"{_redact_url(text)!r}; use rtsp, http(s), a V4L2 index or a file path"
            )
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 - parsing the port is what validates it
        except ValueError as error:
            raise ConfigurationError(
                f"camera.source: malformed URL {_redact_url(text)!r}: {error}"
            ) from error
        if scheme == "file":
            if not parts.path:
                raise ConfigurationError(f"camera.source: no file path in {text!r}")
            return parts.path
        if not parts.hostname:
            raise ConfigurationError(f"camera.source: no host in {_redact_url(text)!r}")
    return text


def _toml_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _toml_value(value: object) -> str:
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


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


def _cv2() -> ModuleType:
    try:
        import cv2
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ConfigurationError(
            "a camera is configured but OpenCV is not installed: pip install 'livetable[vision]'"
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
    cv2 = _cv2()
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


class CameraCapture:
    """A capture thread over ``cv2.VideoCapture`` that keeps only the newest frame.

    Reading continuously (rather than on demand) keeps the driver's buffer empty, so the
    frame handed out is the table as it is now, not as it was a few buffered frames ago. On
    any failure the source is released, :class:`~drivers.camera_events.CameraOffline` is put
    on ``events``, the held frame is dropped and the source is reopened after a delay that
    doubles from ``reconnect_initial_s`` up to ``reconnect_max_s``; each successful reopen
    puts :class:`~drivers.camera_events.CameraOnline`. A video file is replayed at its frame
    rate; its end counts as the source going away, so it is replayed again after the delay.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        config: CameraConfig,
        events: queue.Queue[CameraEvent] | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._events = events
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
        _cv2()
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
        cv2 = _cv2()
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
        if self._events is not None:
            self._events.put(event)


def _open_capture(config: CameraConfig) -> Any:
    """An opened ``cv2.VideoCapture`` on ``config``'s source; DeviceError if it cannot open."""
    cv2 = _cv2()
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
    cv2 = _cv2()
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
