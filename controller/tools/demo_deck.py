"""The demo's enrolled deck for ``livetable demo --camera``: enrolled once from pictures the
simulated table camera takes, as ``livetable camera enrol`` does, and cached."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import TextIO

# The demo's deck is enrolled as a studio enrols its own (`livetable camera enrol`): pictures
# of every card laid in a slot, taken by the table camera (here the camera simulator), 20 of
# each card: 5 in each of four camera set-ups and slots, none of them a set-up the demo then
# plays with. Enrolled from rendered scenes instead (docs/vision.md's synthetic pictures),
# its calibration met a misread at 0.926 and the deck abstained on 37-46 % of blackjack reads
# on the felt; enrolled from the felt, 11-26 % (docs/camera.md).
DEMO_DECK_LAYOUT = "blackjack-classic"
DEMO_DECK_SETUPS = (
    (100, "box1.hand1.card1"),
    (101, "box3.hand1.card1"),
    (102, "dealer.card1"),
    (103, "box2.hand1.card1"),
)
DEMO_DECK_PICTURES_PER_SETUP = 5


def cache_dir() -> Path:
    """``$LIVETABLE_CACHE_DIR``, else ``~/.cache/livetable`` (as the card artwork's cache)."""
    configured = os.environ.get("LIVETABLE_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "livetable"


def demo_deck_path(design: str, model_digest: str) -> Path:
    """Where the demo caches its enrolled deck of ``design`` for the model ``model_digest``.

    The name carries the deck file's format and the locator's and face comparison's
    revisions: a deck cached by an older livetable still loads, but would read without what
    the newer enrolment adds (the corner thumbnails, the corners an older locator missed, a
    face level calibrated with the face compared as it now is)."""
    from vision.deck import FORMAT_VERSION
    from vision.face import FACE_REVISION
    from vision.locate import LOCATOR_REVISION

    pictures = 52 * DEMO_DECK_PICTURES_PER_SETUP * len(DEMO_DECK_SETUPS)
    revisions = f"v{FORMAT_VERSION}-l{LOCATOR_REVISION}-f{FACE_REVISION}"
    name = f"{design}-felt{pictures}-{revisions}-{model_digest[:16]}.npz"
    return cache_dir() / "decks" / name


def demo_deck(design: str, out: TextIO) -> Path:
    """The enrolled deck of ``design`` for the demo: from the cache, or enrolled now (about
    a minute) from 1,040 pictures the camera simulator takes of the cards laid in a slot, with
    the collector of ``livetable camera enrol``, and cached. The file name carries the
    model's digest: a retrained model enrols again rather than load a deck it refuses."""
    from controller.kernel.cards import ALL_FACES, Card
    from drivers.camera_enrol import collect_pictures
    from simulators.camera import SimulatedCamera
    from vision.enrol import enrol, labelled_images, read_image
    from vision.model import DEFAULT_MODEL, CornerClassifier

    classifier = CornerClassifier(DEFAULT_MODEL)
    path = demo_deck_path(design, classifier.digest)
    if path.exists():
        print(f"livetable demo: using the enrolled {design} deck cached in {path}", file=out)
        return path
    pictures = 52 * DEMO_DECK_PICTURES_PER_SETUP * len(DEMO_DECK_SETUPS)
    print(
        f"livetable demo: enrolling a {design} deck from {pictures:,} pictures taken by the "
        f"simulated table camera (once: it is cached in {path}) ...",
        file=out,
        flush=True,
    )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="livetable-demo-deck-") as folder:
        for number, (seed, slot) in enumerate(DEMO_DECK_SETUPS, start=1):
            camera = SimulatedCamera(DEMO_DECK_LAYOUT, design, seed=seed)

            def lay(
                card: Card, _k: int, _n: int, camera: SimulatedCamera = camera, slot: str = slot
            ) -> None:
                camera.clear()
                camera.deal(slot, card)

            # The collector counts the pictures already in the folder: each set-up adds five.
            target = number * DEMO_DECK_PICTURES_PER_SETUP
            collect_pictures(camera, slot, ALL_FACES, target, lay, Path(folder), timeout_s=10.0)
        examples = ((item.card, read_image(item.path)) for item in labelled_images(Path(folder)))
        deck = enrol(classifier, examples, name=f"{design} (livetable demo)")
    deck.save(path)  # all or nothing: a stopped demo leaves no half-written cache
    print(
        f"livetable demo: enrolled in {time.monotonic() - started:.0f} s "
        f"(threshold {deck.threshold:.3f})",
        file=out,
        flush=True,
    )
    return path
