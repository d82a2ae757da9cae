"""Which installed card designs the recogniser is built for, grouped into families.

A *family* is a set of designs that share their index glyphs (the same artwork at another
resolution, in four colours, or with other court figures). Leave-one-out measurements hold a
whole family out, so a design never counts as "unseen" while its twin was trained on.

Designs whose index is not a rank above a suit in the top-left and bottom-right corners
(German or Swiss suits, indices in other corners, circuit-board "cards") are not supported:
the recogniser abstains on them, which is the safe answer.
"""

from __future__ import annotations

from typing import Final

FAMILIES: Final[dict[str, tuple[str, ...]]] = {
    "anglo": ("anglo", "anglo_bitmap"),
    "anglo_modern": ("anglo_modern", "anglo_modern_4_color"),
    "anglo_poker": ("anglo_poker", "simplistic"),
    "atlasnye": ("atlasnye", "atlasnye_skat", "Атласные"),
    "bellot": ("bellot",),
    "berlin": ("berlin", "lattmann", "orell", "rheinland", "tarocco"),
    "dondorf": ("dondorf", "kde-dondorf"),
    "gnomangelo": ("gnomangelo", "gnomangelo_bitmap"),
    "paris": ("paris", "guyenne-classic", "kde-gm-paris"),
    "ancient_french": ("ancient_french",),
    "ancient_egyptians": ("kde-ancient-egyptians",),
    "jolly_royal": ("kde-jolly-royal",),
    "ornamental": ("ornamental", "kde-nicu-ornamental"),
    "nicu_white": ("kde-nicu-white",),
    "penguins": ("kde-penguins",),
    "standard": ("kde-standard",),
    "tigullio": ("tigullio", "kde-tigullio-international"),
    "xskat_french": ("kde-xskat-french",),
    "neoclassical": ("neoclassical", "neoclassical_4_color"),
    "plastic": ("plastic",),
    "slavic_costumes": ("slavic_costumes",),
    "tango": ("tango",),
}

UNSUPPORTED: Final = frozenset(
    {
        "kde-future",
        "kde-konqi-modern",
        "kde-oxygen",
        "kde-oxygen-air",
        "kde-oxygen-white",
        "kde-xskat-german",
        "swiss-xvii",
        "tango_nuevo",
    }
)

# Held out of training in the leave-one-family-out measurement: two folds of three families,
# one evaluation design each. Chosen for variety (vector, bitmap-like, large and small
# indices), never tuned on.
HOLDOUT_FOLDS: Final[dict[str, tuple[str, ...]]] = {
    "fold-a": ("standard", "plastic", "tango"),
    "fold-b": ("penguins", "bellot", "nicu_white"),
}


def family_of(design: str) -> str | None:
    """The family ``design`` belongs to, or None for an unsupported or unknown design."""
    for family, designs in FAMILIES.items():
        if design in designs:
            return family
    return None


def supported_designs(installed: list[str]) -> list[str]:
    """The installed designs the recogniser is trained for, in a stable order."""
    return [design for design in installed if family_of(design) is not None]
