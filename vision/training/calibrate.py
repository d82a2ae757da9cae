"""Calibrate the abstention threshold of a model on designs it was not trained on.

The recogniser runs with no threshold over synthetic scenes of the calibration designs; the
threshold is set above the best score any wrong answer reached, plus a safety margin in
log-odds (the calibration set is finite and the next wrong answer may score a little
higher). The result is written to the model's JSON settings.

    .venv/bin/python -m vision.training.calibrate --model vision/models/generic.onnx \\
        --designs kde-penguins bellot kde-nicu-white --count 600
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from controller.kernel.cards import ALL_FACES
from vision.designs import family_of
from vision.evaluate import evaluate
from vision.locate import LOCATOR_REVISION
from vision.recognise import Recogniser, threshold_above
from vision.synth import render_scene

# Log-odds added above the highest-scoring wrong answer: odds 20 times those of the worst
# mistake seen in calibration.
DEFAULT_MARGIN = math.log(20.0)
# Never accept an answer the model itself rates below this, whatever calibration found.
MINIMUM_THRESHOLD = 0.9


def scenes(designs: list[str], count: int, seed: int):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    for design in designs:
        for number in range(count):
            card = ALL_FACES[number % len(ALL_FACES)]
            yield f"{design}/{number}", card, render_scene(design, card, rng).image


def choose_threshold(
    best_scores: list[tuple[float, bool, str]], margin: float
) -> tuple[float, float]:
    """(threshold, highest wrong score) from (score, right, reason) per image. An ambiguous
    reading abstains whatever the threshold; one whose corners disagree abstains too, but
    counts: with one corner hidden it would be answered."""
    wrong = [score for score, right, reason in best_scores if not right and reason != "ambiguous"]
    worst = max(wrong, default=0.0)
    return threshold_above(worst, margin, MINIMUM_THRESHOLD), worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--designs", nargs="+", required=True)
    parser.add_argument("--count", type=int, default=600, help="images per design")
    parser.add_argument("--seed", type=int, default=777)
    parser.add_argument("--margin", type=float, default=DEFAULT_MARGIN)
    args = parser.parse_args(argv)
    settings_path = args.model.with_suffix(".json")
    settings = json.loads(settings_path.read_text()) if settings_path.exists() else {}
    if "threshold" not in settings:
        settings["threshold"] = 1.0
        settings_path.write_text(json.dumps(settings))
    training = args.model.with_suffix(".training.json")
    if training.exists():
        trained_on = set(json.loads(training.read_text())["trained_on"])
        trained_families = {family_of(design) for design in trained_on}
        overlap = [d for d in args.designs if family_of(d) in trained_families]
        if overlap:
            raise SystemExit(f"calibration designs {overlap} are in the model's training set")
    recogniser = Recogniser(args.model, threshold=0.0)
    report = evaluate(recogniser, scenes(args.designs, args.count, args.seed))
    threshold, worst = choose_threshold(report.best_scores, args.margin)
    kept = sum(
        1
        for score, right, reason in report.best_scores
        if score >= threshold and right and reason == "recognised"
    )
    settings.update(
        {
            "threshold": threshold,
            "calibration": {
                "designs": args.designs,
                "images": report.total,
                "seed": args.seed,
                "highest_wrong_score": worst,
                "margin_log_odds": args.margin,
                "correct_at_threshold": kept / max(report.total, 1),
                "wrong_without_threshold": report.wrong,
                "locator_revision": LOCATOR_REVISION,
            },
        }
    )
    settings_path.write_text(json.dumps(settings, indent=1) + "\n")
    print(json.dumps(settings, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
