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
