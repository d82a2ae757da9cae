"""``livetable camera calibrate``: a snapshot with every position's region drawn on it;
``livetable camera enrol``: the studio's deck enrolled from pictures the table camera takes.

An engineer points the camera at the table, runs ``calibrate``, and checks in the PNG that
each named outline lies over the spot where that position's card is dealt. ``enrol`` then
asks for each card to be laid in one slot, saves the slot's picture, and enrols the deck from
the folder exactly as ``livetable vision enrol`` does. OpenCV is imported only when a command
runs, never when the CLI is built.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from controller.kernel.cli_support import (
    add_json,
    default_to_help,
    examples,
    positive_int,
    positive_seconds,
)
from controller.kernel.errors import ConfigurationError, DeviceError

if TYPE_CHECKING:
    from controller.kernel.cards import Card
    from drivers.camera_enrol import Ask

logger = logging.getLogger(__name__)

_IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"})


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``camera calibrate`` and ``camera enrol`` to the ``livetable`` command tree."""
    camera = subparsers.add_parser(
        "camera",
        help="camera set-up",
        description="Camera set-up and checks.",
        epilog=examples("livetable camera calibrate --config /etc/livetable/t1.toml"),
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
        epilog=examples(
            "livetable camera calibrate --config /etc/livetable/t1.toml --output t1-regions.png"
        ),
    )
    _add_camera_options(calibrate)
    calibrate.add_argument(
        "--image", type=Path, help="use this image file as the frame instead of a camera"
    )
    calibrate.add_argument(
        "--output",
        type=Path,
        default=Path("camera-calibration.png"),
        help="where to save the snapshot (default: camera-calibration.png)",
    )
    add_json(calibrate)
    calibrate.set_defaults(func=run_calibrate)
    _register_enrol(camera_commands)
    default_to_help(camera)


def _add_camera_options(parser: argparse.ArgumentParser) -> None:
    """--config, --section and --source: where a camera command finds its camera."""
    parser.add_argument(
        "--config",
        required=True,
        type=Path,
        help="TOML file holding a [camera] table (a table's config file, or a camera-only file)",
    )
    parser.add_argument(
        "--section",
        default="camera",
        help="dotted name of the camera table in the file (default: camera)",
    )
    parser.add_argument(
        "--source", help="read from this source instead (V4L2 index, URL or video file)"
    )


def run_calibrate(args: argparse.Namespace) -> int:
    """Grab a frame, draw the regions, save the snapshot; print what was done."""
    import cv2

    from controller.service.config import load_camera_config
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


# How long to wait for the first frame after a card is laid: a camera that was just opened
# takes a moment, and a network camera may reconnect once.
_DEFAULT_FRAME_TIMEOUT_S = 10.0


def _register_enrol(camera_commands: argparse._SubParsersAction) -> None:
    enrol = camera_commands.add_parser(
        "enrol",
        help="enrol the studio's deck from pictures the table camera takes",
        description=(
            "Ask for each card to be laid in one slot, save the slot's region from a fresh "
            "frame as PICTURES_DIR/<CARD>_<nnn>.png, then enrol the deck from that folder as "
            "livetable vision enrol does and write it for the camera reader's [vision] deck. "
            "Stopped (Ctrl-C) or failed, run it again: the pictures already taken are kept "
            "and counted."
        ),
        epilog=examples(
            "livetable camera enrol --config /etc/livetable/t1.toml --slot player.card1 "
            "-o /etc/livetable/decks/studio-deck.npz"
        ),
    )
    _add_camera_options(enrol)
    enrol.add_argument(
        "--slot", required=True, help="the card slot (a region name) to lay the cards in"
    )
    enrol.add_argument("-o", "--output", required=True, type=Path, help="deck file to write")
    enrol.add_argument(
        "--pictures",
        type=positive_int,
        default=20,
        help="pictures of each card (default: 20; fewer than 4 leaves the deck uncalibrated)",
    )
    enrol.add_argument(
        "--dir",
        type=Path,
        dest="pictures_dir",
        help="where the pictures go (default: next to the deck, DECK.pictures/)",
    )
    enrol.add_argument(
        "--cards",
        help="comma-separated cards to take pictures of (default: all 52); the folder must "
        "hold every card before the deck is enrolled",
    )
    enrol.add_argument("--name", default="", help="a name for the deck, kept in the file")
    enrol.add_argument(
        "--model", type=Path, help="another exported model (default: the shipped one)"
    )
    enrol.add_argument(
        "--timeout-s",
        dest="timeout",
        type=positive_seconds,
        default=_DEFAULT_FRAME_TIMEOUT_S,
        help=f"seconds to wait for a frame (default: {_DEFAULT_FRAME_TIMEOUT_S:g})",
    )
    enrol.set_defaults(func=run_enrol)


def _cards_option(text: str | None) -> list[Card]:
    from controller.kernel.cards import ALL_FACES, parse_card
    from controller.kernel.errors import RulesError

    if text is None:
        return list(ALL_FACES)
    try:
        cards = [parse_card(item.strip()) for item in text.split(",") if item.strip()]
    except RulesError as error:
        raise ConfigurationError(f"--cards: {error}") from error
    if not cards:
        raise ConfigurationError("--cards names no card")
    return cards


def _ask_on_terminal(slot: str) -> Ask:
    """Prompt for each picture on stdout and wait for Enter on stdin."""

    def ask(card: Card, k: int, n: int) -> None:
        print(
            f"lay {card} in slot {slot} (picture {k} of {n}; move it a little between "
            "pictures) and press Enter",
            end=" ",
            flush=True,
        )
        try:
            input()
        except EOFError as error:
            raise ConfigurationError(
                "the input ended before every picture was taken; run the command again to continue"
            ) from error

    return ask


def run_enrol(args: argparse.Namespace) -> int:
    """Collect the missing pictures from the camera, then enrol the folder into the deck."""
    from controller.service.config import load_camera_config
    from drivers.camera import CameraCapture
    from drivers.camera_enrol import collect_pictures
    from vision import cli as vision_cli

    config = load_camera_config(args.config, args.section)
    if args.source is not None:
        config = config.with_source(args.source)
    if args.slot not in config.regions:
        raise ConfigurationError(
            f"no camera region for slot {args.slot!r} in {args.config}; configured: "
            f"{', '.join(sorted(config.regions)) or 'none'}"
        )
    if args.pictures < 1:
        raise ConfigurationError(f"--pictures must be at least 1, got {args.pictures}")
    if not args.timeout > 0:
        raise ConfigurationError(f"--timeout-s must be positive, got {args.timeout}")
    cards = _cards_option(args.cards)
    pictures_dir = args.pictures_dir or args.output.with_suffix(".pictures")
    capture = CameraCapture(config)
    capture.start()
    try:
        collection = collect_pictures(
            capture,
            args.slot,
            cards,
            args.pictures,
            _ask_on_terminal(args.slot),
            pictures_dir,
            args.timeout,
            tell=lambda message: print(message, flush=True),
        )
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: the pictures taken are kept in {pictures_dir}; run the same "
            "command to continue",
            file=sys.stderr,
        )
        raise
    finally:
        capture.stop()
    already = sum(collection.already_there.values())
    print(
        f"took {len(collection.written)} pictures of slot {args.slot} into {pictures_dir}"
        + (f" ({already} were already there)" if already else "")
    )
    status = vision_cli.run_enrol(
        argparse.Namespace(
            directory=pictures_dir,
            output=args.output,
            name=args.name or args.output.stem,
            model=args.model,
            threshold=None,
        )
    )
    # vision enrol's own report says the deck's threshold and what its calibration found.
    return status
