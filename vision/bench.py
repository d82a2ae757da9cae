"""``livetable bench vision``: milliseconds per card region, on one core.

Synthetic regions (one card on felt, the evaluation conditions) are rendered first, then
recognised one by one with OpenCV limited to one thread; the figures are percentiles from
that one run (the machine may be shared: run it on a quiet machine for the record).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.kernel.cli_support import (
    add_json,
    examples,
    non_negative_int,
    positive_int,
)
from controller.kernel.stats import percentile


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "vision",
        help="card recognition time per card region (p50/p99, one core)",
        description="Milliseconds per card region, on one core: synthetic regions are "
        "rendered first, then recognised one by one with OpenCV limited to one thread; the "
        "figures are percentiles from that one run.",
        epilog=examples("livetable bench vision", "livetable bench vision --deck studio.npz"),
    )
    parser.add_argument("--images", type=positive_int, default=300, help="regions to recognise")
    parser.add_argument("--design", default="kde-standard", help="card design to render")
    parser.add_argument(
        "--seed", type=non_negative_int, default=11, help="random seed (default 11)"
    )
    parser.add_argument("--deck", type=Path, help="time with an enrolled deck file")
    add_json(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import cv2
    import numpy as np

    from controller.kernel.cards import ALL_FACES
    from controller.kernel.errors import ConfigurationError
    from controller.kernel.progress import progress
    from vision.deck import EnrolledDeck
    from vision.recognise import Recogniser
    from vision.synth import render_scene

    if args.images < 10:
        raise ConfigurationError("--images must be at least 10 for a p99")
    cv2.setNumThreads(1)
    rng = np.random.default_rng(args.seed)
    regions = [
        render_scene(args.design, ALL_FACES[i % len(ALL_FACES)], rng).image
        for i in range(args.images)
    ]
    deck = EnrolledDeck.load(args.deck) if args.deck else None
    recogniser = Recogniser(deck=deck)
    recogniser.recognise(regions[0])  # load and warm up outside the timing
    total: list[float] = []
    locate_ms: list[float] = []
    classify_ms: list[float] = []
    with progress(2 * len(regions), "reading card regions") as advance:
        _time_regions(regions, recogniser, total, locate_ms, classify_ms, advance)

    def summary(values: list[float]) -> dict[str, float]:
        return {
            "p50": round(percentile(values, 50), 2),
            "p90": round(percentile(values, 90), 2),
            "p99": round(percentile(values, 99), 2),
            "max": round(max(values), 2),
        }

    report = {
        "regions": len(regions),
        "region_size": list(regions[0].shape[1::-1]),
        "threads": cv2.getNumThreads(),
        "ms_per_region": summary(total),
        "ms_locate": summary(locate_ms),
        "ms_classify": summary(classify_ms),
    }
    if args.json:
        print(json.dumps(report))
    else:
        print(
            f"vision: {len(regions)} regions of {regions[0].shape[1]}x{regions[0].shape[0]} "
            "px on one thread"
        )
        for name in ("ms_per_region", "ms_locate", "ms_classify"):
            figures = report[name]
            print(
                f"  {name:14s} p50 {figures['p50']:6.2f}  p90 {figures['p90']:6.2f}  "
                f"p99 {figures['p99']:6.2f}  max {figures['max']:6.2f}"
            )
    return 0


def _time_regions(
    regions: list[Any],
    recogniser: Any,
    total: list[float],
    locate_ms: list[float],
    classify_ms: list[float],
    advance: Callable[[int], None],
) -> None:
    """Time each region whole, then its two stages apart (where the time goes); the bar
    advances outside the timed spans."""
    import numpy as np

    from vision.locate import cut_patch, find_corners, normalise_patches

    for region in regions:
        started = time.perf_counter()
        recogniser.recognise(region)
        total.append((time.perf_counter() - started) * 1000)
        advance(1)
    for region in regions:
        started = time.perf_counter()
        candidates = find_corners(region)
        located = time.perf_counter()
        if candidates:
            batch = normalise_patches(np.stack([cut_patch(region, c) for c in candidates]))
            recogniser.classifier.predict(batch)
        finished = time.perf_counter()
        locate_ms.append((located - started) * 1000)
        classify_ms.append((finished - located) * 1000)
        advance(1)
