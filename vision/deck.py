"""An enrolled deck: a small classifier head fitted to one studio's card design.

The generic network's 64-value embedding of an index patch is fed to a softmax layer of 53
classes (the 52 faces in :data:`ALL_FACES` order, then "no index"), fitted on labelled
pictures of the studio's own cards by :mod:`vision.enrol`. The file records the digest of
the network it was fitted on: an enrolled deck is useless, and refused, with another one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from controller.errors import ConfigurationError

if TYPE_CHECKING:
    import numpy as np

FORMAT_VERSION: Final = 1
NO_INDEX_CLASS: Final = 52


@dataclass(frozen=True)
class EnrolledDeck:
    """Softmax head over standardised embeddings, and where it came from."""

    weights: np.ndarray  # (64, 53)
    bias: np.ndarray  # (53,)
    mean: np.ndarray  # (64,)
    scale: np.ndarray  # (64,)
    model_digest: str
    threshold: float
    info: dict[str, object]

    def probabilities(self, embedding: np.ndarray) -> np.ndarray:
        """(N, 53) class probabilities for (N, 64) embeddings."""
        import numpy as np

        logits = ((embedding - self.mean) / self.scale) @ self.weights + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exponent = np.exp(logits)
        return exponent / exponent.sum(axis=1, keepdims=True)

    def save(self, path: Path) -> None:
        import numpy as np

        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            np.savez(
                handle,
                weights=self.weights,
                bias=self.bias,
                mean=self.mean,
                scale=self.scale,
                meta=np.array(
                    json.dumps(
                        {
                            "format": FORMAT_VERSION,
                            "model_digest": self.model_digest,
                            "threshold": self.threshold,
                            "info": self.info,
                        }
                    )
                ),
            )

    @classmethod
    def load(cls, path: Path) -> EnrolledDeck:
        """Read a deck file; :class:`ConfigurationError` if missing, damaged or foreign."""
        import numpy as np

        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                deck = cls(
                    weights=data["weights"].astype(np.float32),
                    bias=data["bias"].astype(np.float32),
                    mean=data["mean"].astype(np.float32),
                    scale=data["scale"].astype(np.float32),
                    model_digest=str(meta["model_digest"]),
                    threshold=float(meta["threshold"]),
                    info=dict(meta.get("info", {})),
                )
        except FileNotFoundError as error:
            raise ConfigurationError(f"enrolled deck {path} not found") from error
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ConfigurationError(f"enrolled deck {path} is not a deck file: {error}") from error
        if meta.get("format") != FORMAT_VERSION:
            raise ConfigurationError(f"enrolled deck {path} has format {meta.get('format')!r}")
        if deck.weights.shape[1] != NO_INDEX_CLASS + 1 or deck.bias.shape != (NO_INDEX_CLASS + 1,):
            raise ConfigurationError(f"enrolled deck {path} has the wrong shape")
        return deck
