"""The camera's configuration: where frames come from and where each table position lies.

* :class:`CameraConfig`, one frozen dataclass validated by :meth:`CameraConfig.from_mapping`
  (a table's TOML config embeds it as its ``[camera]`` table; see ``docs/camera.md``);
* :class:`Region`, a named rectangle or quadrilateral in frame pixels;
* :func:`card_slot`, the region name of a card the rules deal to a hand.

Data and validation only: no OpenCV, no threads, so a config can be checked anywhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from controller.kernel.errors import ConfigurationError

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
