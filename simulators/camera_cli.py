"""``livetable sim camera``: render a simulated table round to a video, frames and crops.

Cards are dealt one at a time to the game's positions; after each card the camera takes
``--frames-per-card`` pictures. The outputs: a video file that ``cv2.VideoCapture`` (and so
the camera driver) reads back, every frame as a PNG, each dealt card's region crop named
``<CARD>_<...>.png`` (the file naming ``livetable vision eval`` reads), and the camera config
(``[camera]`` TOML with the simulator's region map) that reads the video. OpenCV is imported
only when the command runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from controller.games.registry import GAMES
from controller.kernel.cli_support import (
    add_json,
    examples,
    non_negative_int,
    positive_int,
    positive_number,
)
from controller.kernel.errors import ConfigurationError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``sim camera`` to the ``livetable sim`` group."""
    parser = subparsers.add_parser(
        "camera",
        help="render a simulated table to a video, frames and card crops",
        description=(
            "Render what a camera above a simulated table sees while a round is dealt, with "
            "realistic perturbations, from real card artwork. Deterministic for a given seed."
        ),
        epilog=examples(
            "livetable sim camera --game baccarat --random 6 --video round.mkv "
            "--config-out camera.toml",
            "livetable sim camera --list-designs",
        ),
    )
    parser.add_argument(
        "--game",
        choices=tuple(GAMES),
        default="baccarat",
        metavar="GAME",
        help="the game dealt: "
        + ", ".join(f"{spec.id} ({spec.label})" for spec in GAMES.values())
        + " (default: baccarat)",
    )
    parser.add_argument("--design", help="card design (see --list-designs)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="random seed (default 0)")
    parser.add_argument("--size", default="1280x720", help="frame size WxH (default 1280x720)")
    parser.add_argument(
        "--cards",
        help="comma-separated cards dealt in the game's usual order, e.g. QH,9S,5D,KC",
    )
    parser.add_argument(
        "--deal",
        action="append",
        default=[],
        metavar="POSITION=CARD",
        help="deal CARD to POSITION (repeatable; CARD:down deals it face down)",
    )
    parser.add_argument(
        "--random",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="deal N random cards (from the seed) in the game's usual order",
    )
    parser.add_argument(
        "--frames-per-card",
        type=positive_int,
        default=10,
        help="pictures taken after each card (default 10)",
    )
    parser.add_argument(
        "--fps", type=positive_number, default=25.0, help="the video's frame rate (default 25)"
    )
    parser.add_argument("--clean", action="store_true", help="no perturbations at all")
    parser.add_argument("--video", type=Path, help="write a video (.avi, .mkv or .mp4)")
    parser.add_argument("--frames-dir", type=Path, help="write every frame as a PNG here")
    parser.add_argument(
        "--crops-dir", type=Path, help="write each dealt card's region crop here, <CARD>_*.png"
    )
    parser.add_argument(
        "--config-out", type=Path, help="write the [camera] TOML that reads --video"
    )
    parser.add_argument("--list-designs", action="store_true", help="list card designs")
    parser.add_argument(
        "--list-positions", action="store_true", help="list the game's positions and regions"
    )
    add_json(parser)
    parser.set_defaults(func=run)


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError as error:
        raise ConfigurationError(f"--size: expected WIDTHxHEIGHT, got {text!r}") from error
    return width, height


def _deals(args: argparse.Namespace, order: tuple[str, ...]) -> list[tuple[str, Any, bool]]:
    import numpy as np

    from controller.kernel.cards import ALL_FACES, parse_card
    from controller.kernel.errors import RulesError

    def card(text: str) -> Any:
        try:
            return parse_card(text.strip())
        except RulesError as error:
            raise ConfigurationError(f"bad card {text!r}: {error}") from error

    deals: list[tuple[str, Any, bool]] = []
    if args.cards:
        texts = [t for t in args.cards.split(",") if t.strip()]
        if len(texts) > len(order):
            raise ConfigurationError(
                f"--cards: {len(texts)} cards, but {args.game}'s usual order has only "
                f"{len(order)} positions ({', '.join(order)}); use --deal for the others"
            )
        deals += [
            (position, card(text), False) for position, text in zip(order, texts, strict=False)
        ]
    if args.random:
        if args.random > len(order):
            raise ConfigurationError(f"--random: at most {len(order)} for {args.game}")
        rng = np.random.default_rng([args.seed, 3])
        picks = rng.choice(len(ALL_FACES), args.random, replace=True)
        deals += [(order[i], ALL_FACES[int(pick)], False) for i, pick in enumerate(picks)]
    for item in args.deal:
        position, separator, text = item.partition("=")
        if not separator:
            raise ConfigurationError(f"--deal: expected POSITION=CARD, got {item!r}")
        text, _, flag = text.partition(":")
        if flag not in ("", "down"):
            raise ConfigurationError(f"--deal: unknown flag {flag!r} in {item!r} (only :down)")
        deals.append((position.strip(), card(text), flag == "down"))
    return deals


def run(args: argparse.Namespace) -> int:
    """Deal the cards, take the pictures, write what was asked for."""
    if args.list_designs:
        from vision.artwork import list_designs

        print("\n".join(list_designs()))
        return 0
    from simulators.camera import Perturbations, SimulatedCamera, layout_for

    width, height = _size(args.size)
    if args.list_positions:
        # The region map depends on the scene (camera tilt from the seed), not on the artwork.
        camera = SimulatedCamera(
            args.game,
            faces=_no_faces,
            seed=args.seed,
            width=width,
            height=height,
            perturbations=Perturbations.none() if args.clean else None,
        )
        for name, region in camera.regions.items():
            print(f"{name} = {json.dumps(region.to_config())}")
        return 0
    if args.design is None:
        raise ConfigurationError("--design is required (see --list-designs)")
    if not (args.video or args.frames_dir or args.crops_dir or args.config_out):
        raise ConfigurationError(
            "nothing to write: give --video, --frames-dir, --crops-dir or --config-out"
        )
    if args.frames_per_card < 1:
        raise ConfigurationError("--frames-per-card must be at least 1")
    layout = layout_for(args.game, width, height)
    camera = SimulatedCamera(
        args.game,
        args.design,
        seed=args.seed,
        layout=layout,
        perturbations=Perturbations.none() if args.clean else None,
        fps=args.fps,
    )
    deals = _deals(args, layout.deal_order)
    try:
        return _render(args, camera, deals)
    except OSError as error:
        raise ConfigurationError(f"cannot write the output: {error}") from error


def _no_faces(_card: Any, _height: int) -> Any:
    raise ConfigurationError("--list-positions renders no card")


def _write_image(cv2: Any, path: Path, image: Any) -> None:
    if not cv2.imwrite(str(path), image):
        raise ConfigurationError(f"cannot write {path}")


def _render(args: argparse.Namespace, camera: Any, deals: list[tuple[str, Any, bool]]) -> int:
    import cv2

    video = camera.open_video(args.video, args.fps) if args.video else None
    frame_paths: list[str] = []
    crop_paths: list[str] = []
    try:
        steps = deals or [None]
        for step in steps:
            if step is not None:
                position, card, face_down = step
                camera.deal(position, card, face_down)
            for frame in camera.frames(args.frames_per_card):
                if video is not None:
                    video.write(frame)
                if args.frames_dir:
                    args.frames_dir.mkdir(parents=True, exist_ok=True)
                    path = args.frames_dir / f"frame-{frame.number:06d}.png"
                    _write_image(cv2, path, frame.image)
                    frame_paths.append(str(path))
            if step is not None and args.crops_dir and not step[2]:
                args.crops_dir.mkdir(parents=True, exist_ok=True)
                crop = camera.region(step[0])
                name = f"{step[1]}_{args.game}-s{args.seed}-{step[0]}-f{crop.number:06d}.png"
                path = args.crops_dir / name
                _write_image(cv2, path, crop.image)
                crop_paths.append(str(path))
    finally:
        if video is not None:
            video.close()
    summary: dict[str, Any] = {
        "game": args.game,
        "design": args.design,
        "seed": args.seed,
        "dealt": {position: str(card) for position, card in camera.dealt().items()},
        "frames": len(deals or [None]) * args.frames_per_card,
        "video": str(args.video) if args.video else None,
        "frames_written": len(frame_paths),
        "crops_written": len(crop_paths),
    }
    if args.config_out:
        source: int | str = str(args.video.resolve()) if args.video else 0
        config = camera.camera_config(source, fps=args.fps)
        args.config_out.parent.mkdir(parents=True, exist_ok=True)
        header = (
            f"# Camera config written by `livetable sim camera` ({args.game}, seed {args.seed}).\n"
        )
        args.config_out.write_text(header + config.to_toml(), encoding="utf-8")
        summary["config"] = str(args.config_out)
    if args.json:
        print(json.dumps(summary))
    else:
        print(
            f"{summary['frames']} frames of {args.game} ({args.design}, seed {args.seed}); "
            f"dealt {len(summary['dealt'])} cards"
        )
        for key in ("video", "config"):
            if summary.get(key):
                print(f"  {key}: {summary[key]}")
        if frame_paths:
            print(f"  frames: {len(frame_paths)} PNG files in {args.frames_dir}")
        if crop_paths:
            print(f"  crops: {len(crop_paths)} PNG files in {args.crops_dir}")
    return 0
