"""Three camera regions of full baccarat tables on which the camera reader, with the demo's
plastic deck as enrolled by ``livetable demo`` (1,040 camera pictures, threshold at the
floor), answers a wrong card: a club read as a spade at 0.998 to 0.9996, the card's index
corners in view. Found by ``scripts/camera-full-table-eval`` on scenes
400-459 (``docs/camera.md``, "Five thousand cards of full tables"). The regions and the deck
are kept as files so that the case stays exactly this one."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.kernel.cards import parse_card
from drivers.camera_reader import ReaderConfig, load_recogniser
from vision.enrol import read_image

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "camera"
REGIONS = sorted(FIXTURES.glob("*-scene*-table*.png"))


def test_the_regions_are_there() -> None:
    assert len(REGIONS) == 3, REGIONS


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="the camera reader answers a wrong card: the plastic demo deck reads these clubs "
    "as spades at 0.998-0.9996, above every threshold; the deck's whole-face check names "
    "the club in all three, but it only confirms readings below the deck's threshold, and "
    "this deck's threshold is the floor (docs/camera.md)",
)
@pytest.mark.parametrize("region", REGIONS, ids=lambda path: path.stem)
def test_the_reader_never_reads_a_club_of_a_full_table_as_a_spade(region: Path) -> None:
    recogniser = load_recogniser(ReaderConfig(deck=FIXTURES / "plastic-demo-deck.npz"))
    card = parse_card(region.name.split("-")[0])
    answer = recogniser.recognise(read_image(region))
    assert answer.card in (None, card), f"{card} read as {answer.card} ({answer.confidence})"
