"""``livetable camera calibrate``: a snapshot with every position's region drawn on it.

An engineer points the camera at the table, runs this, and checks in the PNG that each named
outline lies over the spot where that position's card is dealt. OpenCV is imported only when
the command runs, never when the CLI is built.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from controller.errors import ConfigurationError, DeviceError

logger = logging.getLogger(__name__)

_IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"})


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``camera calibrate`` to the ``livetable`` command tree."""
    camera = subparsers.add_parser(
        "camera", help="camera set-up", description="Camera set-up and checks."
    )
    camera_commands = camera.add_subparsers(dest="camera_command", metavar="WHAT")
    calibrate = camera_commands.add_parser(
        "calibrate",
        help="save a snapshot with every position's region drawn on it",
        description=(
            "Grab one frame from the configured camera (or --source, or an image file given "
            "with --image), draw every region with its position name, and save a PNG for an "
            "engineer to check that each outline lies over its card spot."
        ),
    )
    calibrate.add_argument(
        "--config",
        required=True,
        type=Path,
        help="TOML file holding a [camera] table (a table's config file, or a camera-only file)",
    )
    calibrate.add_argument(
        "--section",
        default="camera",
        help="dotted name of the camera table in the file (default: camera)",
    )
    calibrate.add_argument(
        "--source", help="read from this source instead (V4L2 index, URL or video file)"
    )
    calibrate.add_argument(
        "--image", type=Path, help="use this image file as the frame instead of a camera"
    )
    calibrate.add_argument(
        "--output",
        type=Path,
        default=Path("camera-calibration.png"),
        help="where to save the snapshot (default: camera-calibration.png)",
    )
    calibrate.add_argument("--json", action="store_true", help="print the summary as JSON")
    calibrate.set_defaults(func=run_calibrate)
    camera.set_defaults(func=lambda _args, parser=camera: _help(parser))


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def load_camera_config(path: Path, section: str = "camera") -> Any:
    """The :class:`~drivers.camera.CameraConfig` in table ``section`` of the TOML file."""
    from drivers.camera import CameraConfig

    try:
        document: Any = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise ConfigurationError(f"config file {path} does not exist") from error
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"cannot read config file {path}: {error}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigurationError(f"{path} is not valid TOML: {error}") from error
    table: Any = document
    for key in section.split(".") if section else ():
        if not isinstance(table, dict) or key not in table:
            raise ConfigurationError(f"{path} has no [{section}] table")
        table = table[key]
    try:
        return CameraConfig.from_mapping(table)
    except ConfigurationError as error:
        raise ConfigurationError(f"{path}: {error}") from error


def run_calibrate(args: argparse.Namespace) -> int:
    """Grab a frame, draw the regions, save the snapshot; print what was done."""
    import cv2

    from drivers.camera import draw_regions, grab_frame

    config = load_camera_config(args.config, args.section)
    if args.source is not None:
        config = config.with_source(args.source)
    if args.image is not None:
        image = cv2.imread(str(args.image), cv2.IMREAD_COLOR)
        if image is None:
            raise DeviceError(f"cannot read image file {args.image}")
        origin = str(args.image)
    else:
        if config.source_kind == "file" and Path(str(config.source)).suffix.lower() in (
            _IMAGE_SUFFIXES
        ):
            image = cv2.imread(str(config.source), cv2.IMREAD_COLOR)
            if image is None:
                raise DeviceError(f"cannot read image file {config.source}")
        else:
            image = grab_frame(config)
        origin = config.display_source
    height, width = image.shape[:2]
    taken = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    caption = f"{origin}  {width}x{height}  {taken}  {len(config.regions)} regions"
    snapshot = draw_regions(image, config, caption)
    try:
        args.output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigurationError(f"cannot write the snapshot {args.output}: {error}") from error
    if not cv2.imwrite(str(args.output), snapshot):
        raise ConfigurationError(f"cannot write the snapshot {args.output}")
    scaled = (width, height) != (config.width, config.height)
    summary = {
        "snapshot": str(args.output),
        "source": origin,
        "frame": [width, height],
        "configured_resolution": [config.width, config.height],
        "regions_scaled": scaled,
        "regions": {name: region.to_config() for name, region in sorted(config.regions.items())},
    }
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"snapshot saved to {args.output} ({width}x{height} frame from {origin})")
    if scaled:
        print(
            f"note: the frame is {width}x{height} but the regions are configured for "
            f"{config.width}x{config.height}; they are scaled to fit"
        )
    if not config.regions:
        print("note: no regions are configured")
    for name, region in sorted(config.regions.items()):
        x0, y0, x1, y1 = region.bounds
        kind = "rectangle" if region.is_rectangle else "quadrilateral"
        print(f"  {name:<24} {kind:<13} x {x0}..{x1}  y {y0}..{y1}")
    return 0
