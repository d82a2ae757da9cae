"""Enrol a studio's deck: fit a deck-specific head on pictures of its cards.

A studio always deals one known brand, so the recogniser need not read every design in the
world, only that one, very reliably. Enrolment reads labelled pictures of the deck (a folder
of ``<CARD>_<anything>.png``, e.g. frames saved from the table camera with the card named),
cuts the corner patches exactly as recognition does, embeds them with the generic network
and fits a 53-class softmax layer (52 faces and "no index") on those embeddings.

A patch counts as an index of the labelled card when the generic network says it is an index
(or already reads that very card); as "no index" when it is clearly not one; and is left out
when in between, so a half-covered corner teaches nothing wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from controller.errors import ConfigurationError
from controller.games.cards import ALL_FACES, RANKS, SUITS, Card, parse_card
from vision.deck import NO_INDEX_CLASS, EnrolledDeck
from vision.locate import cut_patch, find_corners, normalise_patches
from vision.model import CornerClassifier

if TYPE_CHECKING:
    import numpy as np

IMAGE_SUFFIXES: Final = frozenset({".png", ".jpg", ".jpeg", ".bmp"})
_INDEX_LIKELY: Final = 0.5
_INDEX_UNLIKELY: Final = 0.2


@dataclass(frozen=True, slots=True)
class LabelledImage:
    path: Path
    card: Card


def card_from_filename(path: Path) -> Card:
    """``QH_0007.png`` -> QH; :class:`ConfigurationError` naming the file otherwise."""
    label = path.stem.split("_", 1)[0]
    try:
        return parse_card(label)
    except Exception as error:
        raise ConfigurationError(
            f"{path.name}: the file name must start with the card, like QH_0007.png"
        ) from error


def labelled_images(directory: Path) -> list[LabelledImage]:
    """Every image in ``directory`` with the card its name starts with, sorted by name."""
    if not directory.is_dir():
        raise ConfigurationError(f"{directory} is not a directory")
    paths = sorted(p for p in directory.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not paths:
        raise ConfigurationError(f"no images (.png, .jpg) in {directory}")
    return [LabelledImage(path, card_from_filename(path)) for path in paths]


def read_image(path: Path) -> np.ndarray:
    """A BGR uint8 image from disk; :class:`ConfigurationError` if it cannot be read."""
    import cv2

    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise ConfigurationError(f"{path} is not an image OpenCV can read")
    return image


def _samples(
    classifier: CornerClassifier, examples: Iterable[tuple[Card, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    face_rank = np.array([RANKS.index(card.rank) for card in ALL_FACES])
    face_suit = np.array([SUITS.index(card.suit) for card in ALL_FACES])
    embeddings, labels = [], []
    for card, image in examples:
        candidates = find_corners(image)
        if not candidates:
            continue
        patches = np.stack([cut_patch(image, candidate) for candidate in candidates])
        prediction = classifier.predict(normalise_patches(patches))
        index_probability = 1.0 - prediction.rank[:, 13]
        faces = prediction.rank[:, face_rank] * prediction.suit[:, face_suit]
        reads_this_card = faces.argmax(axis=1) == ALL_FACES.index(card)
        for i in range(len(candidates)):
            if index_probability[i] >= _INDEX_LIKELY or reads_this_card[i]:
                labels.append(ALL_FACES.index(card))
            elif index_probability[i] < _INDEX_UNLIKELY:
                labels.append(NO_INDEX_CLASS)
            else:
                continue
            embeddings.append(prediction.embedding[i])
    if not embeddings:
        raise ConfigurationError("no card corners were found in the enrolment images")
    return np.array(embeddings, np.float32), np.array(labels, np.int64)


def fit_head(
    embeddings: np.ndarray, labels: np.ndarray, iterations: int = 600, l2: float = 1e-3
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Softmax regression by full-batch gradient descent (Adam): (weights, bias, mean, scale).

    Classes are weighted equally, so 52 faces with a handful of examples each are not
    swamped by the many "no index" corners.
    """
    import numpy as np

    classes = NO_INDEX_CLASS + 1
    mean = embeddings.mean(axis=0)
    scale = embeddings.std(axis=0) + 1e-3
    features = (embeddings - mean) / scale
    counts = np.bincount(labels, minlength=classes).astype(np.float64)
    sample_weight = (1.0 / np.maximum(counts, 1.0))[labels]
    sample_weight /= sample_weight.sum()
    one_hot = np.eye(classes)[labels]
    weights = np.zeros((features.shape[1], classes))
    bias = np.zeros(classes)
    moments = [np.zeros_like(weights), np.zeros_like(bias)]
    squares = [np.zeros_like(weights), np.zeros_like(bias)]
    rate, beta1, beta2 = 0.05, 0.9, 0.999
    for step in range(1, iterations + 1):
        logits = features @ weights + bias
        logits -= logits.max(axis=1, keepdims=True)
        probabilities = np.exp(logits)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        error = (probabilities - one_hot) * sample_weight[:, None]
        gradients = [features.T @ error + l2 * weights, error.sum(axis=0)]
        for parameter, gradient, moment, square in zip(
            (weights, bias), gradients, moments, squares, strict=True
        ):
            moment *= beta1
            moment += (1 - beta1) * gradient
            square *= beta2
            square += (1 - beta2) * gradient**2
            corrected = moment / (1 - beta1**step)
            parameter -= rate * corrected / (np.sqrt(square / (1 - beta2**step)) + 1e-8)
    return (
        weights.astype(np.float32),
        bias.astype(np.float32),
        mean.astype(np.float32),
        scale.astype(np.float32),
    )


def enrol(
    classifier: CornerClassifier,
    examples: Iterable[tuple[Card, np.ndarray]],
    name: str = "",
    threshold: float | None = None,
) -> EnrolledDeck:
    """Fit an :class:`EnrolledDeck` from (card, BGR image) pairs of one deck.

    Every face must appear at least once: a face never seen cannot be read.
    """
    import numpy as np

    embeddings, labels = _samples(classifier, examples)
    missing = [str(ALL_FACES[i]) for i in range(52) if not np.any(labels == i)]
    if missing:
        raise ConfigurationError(
            f"no readable index corner of {', '.join(missing)} in the enrolment images; "
            "add pictures of those cards"
        )
    weights, bias, mean, scale = fit_head(embeddings, labels)
    return EnrolledDeck(
        weights=weights,
        bias=bias,
        mean=mean,
        scale=scale,
        model_digest=classifier.digest,
        threshold=classifier.threshold if threshold is None else threshold,
        info={
            "name": name,
            "index_samples": int((labels < NO_INDEX_CLASS).sum()),
            "no_index_samples": int((labels == NO_INDEX_CLASS).sum()),
        },
    )
