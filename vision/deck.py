"""An enrolled deck: the generic network's two heads, fine-tuned on one studio's cards.

The generic network ends in two linear heads over a 64-value embedding: rank (13 ranks and
"no index") and suit. Enrolment (:mod:`vision.enrol`) starts from those heads
(``<model>.heads.npz``) and fits them to labelled pictures of the studio's deck, pulled back
towards the generic weights so a few pictures per card adapt the heads without unlearning
them. The file records the digest of the network it was fitted on: an enrolled deck is
useless, and refused, with another one.
"""

from __future__ import annotations

import json
import os
import secrets
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from controller.errors import ConfigurationError

if TYPE_CHECKING:
    import numpy as np

FORMAT_VERSION: Final = 2
RANK_CLASSES: Final = 14  # 13 ranks, then "no index"
SUIT_CLASSES: Final = 4
NO_INDEX_CLASS: Final = 13


def softmax(logits: np.ndarray) -> np.ndarray:
    import numpy as np

    shifted = logits - logits.max(axis=1, keepdims=True)
    exponent = np.exp(shifted)
    return exponent / exponent.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Heads:
    """Linear rank and suit heads over embeddings: logits = embedding @ weight + bias."""

    rank_weight: np.ndarray  # (64, 14)
    rank_bias: np.ndarray  # (14,)
    suit_weight: np.ndarray  # (64, 4)
    suit_bias: np.ndarray  # (4,)

    def probabilities(self, embedding: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rank (N, 14), suit (N, 4)) probabilities for (N, 64) embeddings."""
        return (
            softmax(embedding @ self.rank_weight + self.rank_bias),
            softmax(embedding @ self.suit_weight + self.suit_bias),
        )

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "rank_weight": self.rank_weight,
            "rank_bias": self.rank_bias,
            "suit_weight": self.suit_weight,
            "suit_bias": self.suit_bias,
        }

    @classmethod
    def from_arrays(cls, data: object) -> Heads:
        import numpy as np

        heads = cls(
            **{
                name: np.asarray(data[name], np.float32)  # type: ignore[index]
                for name in ("rank_weight", "rank_bias", "suit_weight", "suit_bias")
            }
        )
        if (
            heads.rank_weight.ndim != 2
            or heads.rank_weight.shape[1] != RANK_CLASSES
            or heads.rank_bias.shape != (RANK_CLASSES,)
            or heads.suit_weight.shape != (heads.rank_weight.shape[0], SUIT_CLASSES)
            or heads.suit_bias.shape != (SUIT_CLASSES,)
        ):
            raise ValueError("heads of the wrong shape")
        return heads

    @classmethod
    def load(cls, path: Path) -> Heads:
        """The generic heads stored beside a model; :class:`ConfigurationError` if unusable."""
        import numpy as np

        try:
            with np.load(path, allow_pickle=False) as data:
                return cls.from_arrays(data)
        except FileNotFoundError as error:
            raise ConfigurationError(f"model heads {path} not found") from error
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
            raise ConfigurationError(f"model heads {path} are unusable: {error}") from error


@dataclass(frozen=True)
class EnrolledDeck:
    """Fine-tuned heads for one deck, and where they came from."""

    heads: Heads
    model_digest: str
    threshold: float
    info: dict[str, object]

    def save(self, path: Path) -> None:
        """Write the deck to ``path``, all of it or nothing.

        The file is written beside ``path`` and renamed over it only once complete, so an
        interrupted enrolment (Ctrl-C, a full disk, a power cut) leaves the deck that was
        there before, never a truncated one the recogniser would refuse at the next start.
        """
        import numpy as np

        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": FORMAT_VERSION,
            "model_digest": self.model_digest,
            "threshold": self.threshold,
            "info": self.info,
        }
        # A name of its own, so two saves to one path cannot write into each other's file;
        # os.open with 0o666 gives the file the usual permissions (the umask's), where
        # tempfile.mkstemp's 0o600 would hide the deck from a daemon running as another user.
        partial = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.partial")
        try:
            descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            with os.fdopen(descriptor, "wb") as handle:
                np.savez(handle, meta=np.array(json.dumps(meta)), **self.heads.arrays())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> EnrolledDeck:
        """Read a deck file; :class:`ConfigurationError` if missing, damaged or foreign."""
        import numpy as np

        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                if meta.get("format") != FORMAT_VERSION:
                    raise ConfigurationError(
                        f"enrolled deck {path} has format {meta.get('format')!r}, "
                        f"expected {FORMAT_VERSION}: enrol the deck again"
                    )
                return cls(
                    heads=Heads.from_arrays(data),
                    model_digest=str(meta["model_digest"]),
                    threshold=float(meta["threshold"]),
                    info=dict(meta.get("info", {})),
                )
        except FileNotFoundError as error:
            raise ConfigurationError(f"enrolled deck {path} not found") from error
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as error:
            raise ConfigurationError(f"enrolled deck {path} is not a deck file: {error}") from error
