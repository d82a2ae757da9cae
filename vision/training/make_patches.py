"""Generate labelled index patches for training, through the production locator.

For every supported design and every card, synthetic scenes are rendered
(:mod:`vision.synth`), the production locator finds corner candidates in them
(:mod:`vision.locate`), and each candidate's patch is labelled from the scene's ground truth:

* the card, when the candidate sits on one of the target's two index corners, that corner is
  not covered, and the locator's scale estimate is close to right;
* "no index" (rank class 13) for every other corner: the two plain corners of the card,
  corners made by a neighbouring card or a hand, a covered index corner;
* nothing (skipped) when it is ambiguous (an index corner half covered, a scale far off).

One ``<design>.npz`` per design is written, so a run can be resumed and split over workers.

    .venv/bin/python -m vision.training.make_patches --out build/patches --scenes-per-card 12
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from multiprocessing import Pool
from pathlib import Path

import numpy as np

from controller.kernel.cards import ALL_FACES, RANKS, SUITS, Card
from vision.artwork import list_designs
from vision.designs import supported_designs
from vision.locate import cut_patch, find_corners
from vision.synth import SceneOptions, render_scene

NO_INDEX = len(RANKS)  # rank class 13

# Training scenes are a little harsher than the evaluation defaults.
TRAINING_OPTIONS = SceneOptions(
    blur_sigma=(0.0, 1.9),
    noise_sigma=(0.0, 9.0),
    brightness=(0.45, 1.4),
    white_balance=0.2,
    glare_probability=0.4,
    occlusion_probability=0.35,
)


def label_candidate(
    candidate_point: np.ndarray,
    candidate_x: np.ndarray,
    candidate_width: float,
    corners: np.ndarray,
    index_visibility: tuple[float, float],
) -> str:
    """ "index", "none" or "skip" for one candidate of a scene."""
    card_width = float(np.linalg.norm(corners[1] - corners[0]))
    distances = np.linalg.norm(corners - candidate_point, axis=1)
    nearest = int(np.argmin(distances))
    if distances[nearest] > 0.15 * card_width:
        return "none"
    if nearest in (1, 3):
        return "none"
    visibility = index_visibility[nearest // 2]
    if visibility < 0.5:
        return "none"
    across = corners[1] - corners[0] if nearest == 0 else corners[3] - corners[2]
    across = across / np.linalg.norm(across)
    scale = candidate_width / card_width
    if visibility < 0.9 or not 0.75 <= scale <= 1.35 or float(across @ candidate_x) < 0.8:
        return "skip"
    return "index"


PROCEDURAL_PREFIX = "procedural-"


def _procedural_faces(design: str) -> Callable[[Card], np.ndarray]:
    """The card images of the procedural deck named ``procedural-<seed>``."""
    from vision.synth import SOURCE_HEIGHT_PX
    from vision.training.procedural import random_style, render_procedural_card

    style = random_style(int(design.removeprefix(PROCEDURAL_PREFIX)))
    return functools.cache(lambda card: render_procedural_card(style, card, SOURCE_HEIGHT_PX))


def patches_for_design(design: str, scenes_per_card: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    faces = _procedural_faces(design) if design.startswith(PROCEDURAL_PREFIX) else None
    patches, ranks, suits = [], [], []
    for card in ALL_FACES:
        for _ in range(scenes_per_card):
            scene = render_scene(design, card, rng, TRAINING_OPTIONS, faces=faces)
            for candidate in find_corners(scene.image):
                label = label_candidate(
                    np.array(candidate.point),
                    np.array(candidate.x_axis),
                    candidate.card_width,
                    scene.corners,
                    scene.index_visibility,
                )
                if label == "skip":
                    continue
                patches.append(cut_patch(scene.image, candidate))
                if label == "index":
                    ranks.append(RANKS.index(card.rank))
                    suits.append(SUITS.index(card.suit))
                else:
                    ranks.append(NO_INDEX)
                    suits.append(-1)
    return {
        "patches": np.array(patches, np.uint8),
        "ranks": np.array(ranks, np.int8),
        "suits": np.array(suits, np.int8),
    }


def _work(job: tuple[str, int, int, Path]) -> str:
    import cv2

    cv2.setNumThreads(1)
    design, scenes_per_card, seed, out = job
    target = out / f"{design}.npz"
    if target.exists():
        return f"{design}: exists"
    started = time.monotonic()
    data = patches_for_design(design, scenes_per_card, seed)
    temporary = out / f".{design}.tmp.npz"
    np.savez_compressed(temporary, **data)
    temporary.replace(target)
    index = int((data["ranks"] != NO_INDEX).sum())
    return (
        f"{design}: {len(data['ranks'])} patches ({index} index) "
        f"in {time.monotonic() - started:.0f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--scenes-per-card", type=int, default=12)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--designs", nargs="*", help="default: every supported design")
    parser.add_argument(
        "--procedural",
        type=int,
        default=0,
        metavar="N",
        help="instead of artwork: N procedural decks (vision/training/procedural.py), "
        "named procedural-<seed> from --procedural-first on",
    )
    parser.add_argument("--procedural-first", type=int, default=0, metavar="SEED")
    args = parser.parse_args(argv)
    if args.procedural:
        first = args.procedural_first
        designs = [f"{PROCEDURAL_PREFIX}{seed}" for seed in range(first, first + args.procedural)]
    else:
        designs = args.designs or supported_designs(list_designs())
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [
        (design, args.scenes_per_card, args.seed + number, args.out)
        for number, design in enumerate(designs)
    ]
    with Pool(args.workers) as pool:
        for message in pool.imap_unordered(_work, jobs):
            print(message, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
