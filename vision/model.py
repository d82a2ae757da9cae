"""The shipped corner classifier: an ONNX file run by OpenCV's dnn module, plus its settings.

``vision/models/generic.onnx`` is produced by ``vision/training/train.py``; its companion
``generic.json`` holds the calibrated decision threshold and how it was measured. No
deep-learning framework is needed at run time and nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from controller.kernel.errors import ConfigurationError

if TYPE_CHECKING:
    import numpy as np

MODEL_DIR: Final = Path(__file__).resolve().parent / "models"
DEFAULT_MODEL: Final = MODEL_DIR / "generic.onnx"


@dataclass(frozen=True, slots=True)
class Prediction:
    """The network's answer for a batch of patches."""

    rank: np.ndarray  # (N, 14) probabilities; column 13 is "no index here"
    suit: np.ndarray  # (N, 4) probabilities, suits in SHDC order
    embedding: np.ndarray  # (N, 64) penultimate activations, for enrolled decks


def _softmax(logits: np.ndarray) -> np.ndarray:
    import numpy as np

    shifted = logits - logits.max(axis=1, keepdims=True)
    exponent = np.exp(shifted)
    return exponent / exponent.sum(axis=1, keepdims=True)


class CornerClassifier:
    """Loads an exported corner network and classifies normalised patches with it.

    One instance is not safe to share between threads (cv2.dnn nets keep state); each
    camera worker builds its own, or calls under :attr:`lock`.
    """

    def __init__(self, path: Path = DEFAULT_MODEL) -> None:
        import cv2

        if not path.is_file():
            raise ConfigurationError(f"vision model {path} not found")
        try:
            self._net = cv2.dnn.readNetFromONNX(str(path))
        except cv2.error as error:
            raise ConfigurationError(f"vision model {path} cannot be loaded: {error}") from error
        self.path = path
        self.digest = hashlib.sha256(path.read_bytes()).hexdigest()
        self.settings = load_settings(path)
        self.lock = threading.Lock()

    @property
    def threshold(self) -> float:
        """The calibrated score below which the recogniser abstains."""
        return float(self.settings["threshold"])

    def predict(self, batch: np.ndarray) -> Prediction:
        """Probabilities for a float32 (N, 3, H, W) batch from ``normalise_patches``."""
        import numpy as np

        if len(batch) == 0:
            return Prediction(np.zeros((0, 14)), np.zeros((0, 4)), np.zeros((0, 64)))
        self._net.setInput(np.ascontiguousarray(batch, np.float32))
        rank, suit, embedding = self._net.forward(["rank", "suit", "embedding"])
        return Prediction(_softmax(rank), _softmax(suit), np.array(embedding))


def load_settings(model_path: Path) -> dict[str, Any]:
    """The JSON settings beside a model (``x.onnx`` -> ``x.json``)."""
    settings_path = model_path.with_suffix(".json")
    if not settings_path.is_file():
        raise ConfigurationError(f"vision model settings {settings_path} not found")
    try:
        settings = json.loads(settings_path.read_text())
        float(settings["threshold"])
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigurationError(f"vision model settings {settings_path} are invalid") from error
    return dict(settings)
