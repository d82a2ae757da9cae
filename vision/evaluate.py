"""Measure a recogniser on labelled images: correct, abstained, wrong, and time per image."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from controller.kernel.cards import Card
from controller.kernel.stats import percentile

if TYPE_CHECKING:
    import numpy as np

    from vision.recognise import Recogniser


@dataclass
class EvalReport:
    """Counts and timings of one evaluation run."""

    total: int = 0
    correct: int = 0
    abstained: int = 0
    wrong: int = 0
    milliseconds: list[float] = field(default_factory=list)
    wrong_answers: list[tuple[str, str, str, float]] = field(default_factory=list)
    # (name, truth, answer, confidence); the best guess and score of every abstention:
    abstentions: list[tuple[str, str, str, float, str]] = field(default_factory=list)
    # Every image's best face: (score, whether it was right, the recogniser's reason), for
    # calibration (run with threshold 0, an answer's reason is "recognised").
    best_scores: list[tuple[float, bool, str]] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    @property
    def abstention_rate(self) -> float:
        return self.abstained / self.total if self.total else 0.0

    def percentile_ms(self, percent: float) -> float:
        return percentile(self.milliseconds, percent) if self.milliseconds else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "images": self.total,
            "correct": self.correct,
            "abstained": self.abstained,
            "wrong": self.wrong,
            "accuracy": round(self.accuracy, 5),
            "abstention_rate": round(self.abstention_rate, 5),
            "ms_p50": round(self.percentile_ms(50), 2),
            "ms_p99": round(self.percentile_ms(99), 2),
            "wrong_answers": [
                {"file": name, "truth": truth, "answer": answer, "confidence": round(score, 4)}
                for name, truth, answer, score in self.wrong_answers
            ],
        }


def evaluate(
    recogniser: Recogniser, examples: Iterable[tuple[str, Card, np.ndarray]]
) -> EvalReport:
    """Run ``recogniser`` on (name, true card, BGR image) examples and count the outcomes."""
    report = EvalReport()
    for name, truth, image in examples:
        started = time.perf_counter()
        result = recogniser.recognise(image)
        report.milliseconds.append((time.perf_counter() - started) * 1000.0)
        report.total += 1
        best_right = result.best == truth
        report.best_scores.append((result.confidence, best_right, result.reason))
        if result.card is None:
            report.abstained += 1
            report.abstentions.append(
                (name, str(truth), str(result.best), result.confidence, result.reason)
            )
        elif result.card == truth:
            report.correct += 1
        else:
            report.wrong += 1
            report.wrong_answers.append((name, str(truth), str(result.card), result.confidence))
    return report


def card_outline(
    centre: tuple[float, float], width: float, radius: float, angle_degrees: float
) -> tuple[np.ndarray, np.ndarray]:
    """A portrait card's outline with rounded corners (polygon points), and its four sharp
    corners (where the straight edges meet, clockwise from the top left), both rotated by
    ``angle_degrees`` about ``centre``."""
    import numpy as np

    height = width * 1.45
    half = np.array([width / 2, height / 2])
    points = []
    # Corner arcs in clockwise order on screen: top-left, top-right, bottom-right, bottom-left.
    for sign, start in (((-1, -1), 180), ((1, -1), 270), ((1, 1), 0), ((-1, 1), 90)):
        arc_centre = np.array(sign) * (half - radius)
        for t in np.radians(np.linspace(start, start + 90, 12)):
            points.append(arc_centre + radius * np.array([np.cos(t), np.sin(t)]))
    sharp = np.array([(-1, -1), (1, -1), (1, 1), (-1, 1)]) * half
    turn = np.radians(angle_degrees)
    rotation = np.array([[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]])
    return np.array(points) @ rotation.T + centre, sharp @ rotation.T + centre


# Two-card overlaps of the locator's overlap scan: the top card shifted from the one under it
# by these fractions of a card's width (across, down), before both are turned.
OVERLAP_SHIFTS: tuple[tuple[float, float], ...] = tuple(
    (across, down)
    for across in (-0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3)
    for down in (0.1, 0.2, 0.3, 0.4)
)
OVERLAP_CARD_WIDTH = 120.0


def overlap_corners_found(angles: Iterable[float]) -> tuple[int, int]:
    """The locator on two overlapping cards drawn on felt (no artwork: the outline alone), at
    each of ``angles`` and every shift of :data:`OVERLAP_SHIFTS`: how many of the cards' sharp
    corners in plain view (outside the other card) have a candidate within 0.03 card widths,
    and how many there are. Where the step between the two outlines is taken for a bite of
    the card's edge, the corner beside it is missed (docs/vision.md, "Locator")."""
    import cv2
    import numpy as np

    from vision.locate import find_corners

    width = OVERLAP_CARD_WIDTH
    found = in_view = 0
    for angle in angles:
        turn = np.radians(angle)
        rotation = np.array([[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]])
        for shift in OVERLAP_SHIFTS:
            image = np.full((400, 400, 3), (40, 110, 30), np.uint8)
            offset = rotation @ (np.array(shift) * width)
            under = card_outline((200.0, 185.0), width, 0.06 * width, angle)
            over = card_outline((200.0 + offset[0], 185.0 + offset[1]), width, 0.06 * width, angle)
            for outline, _sharp in (under, over):
                cv2.fillPoly(image, [np.round(outline).astype(np.int32)], (235, 240, 240))
            points = [np.array(c.point) for c in find_corners(image)]
            cover = over[0].astype(np.float32).reshape(-1, 1, 2)
            seen = [
                p
                for p in under[1]
                if cv2.pointPolygonTest(cover, (float(p[0]), float(p[1])), True) < -2.0
            ]
            for corner in [*seen, *over[1]]:
                in_view += 1
                found += any(np.linalg.norm(p - corner) < 0.03 * width for p in points)
    return found, in_view
