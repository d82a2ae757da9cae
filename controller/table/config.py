"""The table's configuration: one frozen dataclass, the ``[table]`` section of the table's
TOML file (read by :func:`controller.service.config.load_config` with the other sections) and
validated at start.

```toml
[table]
id = "t1"
game = "baccarat"                 # baccarat, blackjack-boundless, blackjack-classic, blackjack-21
betting_s = 15.0                  # how long betting stays open
decision_s = 10.0                 # blackjack: how long the platform has for each decision
rounds_after_cut_card = 0         # 0: the cut card's round is the last; 1: one more round
dealer_idle_s = 60.0              # a card expected for longer than this pauses the table
camera_cross_check = false        # compare every face-up card with the camera's reading
journal_path = "/var/lib/livetable/t1.journal"
variant = "traditional"           # baccarat's rules: or "no-commission"
stop_timeout_s = 120.0            # on SIGTERM, how long the round in play has to finish
```

``id`` and ``journal_path`` are required (a file without one is refused, naming the key);
every other key has the default shown. A relative ``journal_path`` is taken relative to the
TOML file. The environment variable ``LIVETABLE_JOURNAL_PATH`` overrides it (for
containers), and then the file need not give it. ``variant`` is the game's rule variant
(only baccarat has any); ``baccarat_mode``, its name before every game could have one, is
read as well (a file gives one or the other).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from controller.games.registry import GAME_IDS, find_game, game_spec
from controller.kernel.config_file import check_keys, invalid, unknown_choice
from controller.kernel.errors import ConfigurationError

# The games and baccarat's rule variants come from the registry (GAME_IDS is imported from
# there and still importable from here).
BACCARAT_MODES: Final = game_spec("baccarat").variants
JOURNAL_PATH_ENV: Final = "LIVETABLE_JOURNAL_PATH"
# The variant's name in a journal's recorded config (``rules_fingerprint``): the name it had
# when journals began recording it, kept so that every journal reads and binds as it did.
STORED_VARIANT: Final = "baccarat_mode"


@dataclass(frozen=True, slots=True)
class OperationalSettings:
    """The table's settings that change no past row's meaning: a journal outlives a change
    of them (journaled as ``SettingsChanged`` and applied from the next round on)."""

    betting_s: float
    decision_s: float
    dealer_idle_s: float
    rounds_after_cut_card: int
    camera_cross_check: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "betting_s": self.betting_s,
            "decision_s": self.decision_s,
            "dealer_idle_s": self.dealer_idle_s,
            "rounds_after_cut_card": self.rounds_after_cut_card,
            "camera_cross_check": self.camera_cross_check,
        }


@dataclass(frozen=True, slots=True)
class TableConfig:
    """Everything the table's state machine and journal need to know about one table."""

    table_id: str = "table"
    game: str = "baccarat"
    betting_s: float = 15.0
    decision_s: float = 10.0
    rounds_after_cut_card: int = 0
    dealer_idle_s: float = 60.0
    camera_cross_check: bool = False
    journal_path: Path = Path("livetable.journal")
    variant: str = "traditional"
    """The game's rule variant; a game without variants ignores it (its default,
    ``traditional``, is what a blackjack table's journals record)."""
    stop_timeout_s: float = 120.0
    """On SIGTERM the table holds between rounds and the daemon waits this long for the
    round in play to finish before it stops anyway (the journal keeps the round, and the
    restart pauses it as ``recovered``). The process's, not the journal's: no fingerprint
    holds it."""

    def __post_init__(self) -> None:
        if not isinstance(self.table_id, str) or not self.table_id.strip():
            raise invalid("id", "a non-empty string (the table id)", self.table_id)
        if find_game(self.game) is None:
            raise unknown_choice("game", self.game, GAME_IDS)
        for name in ("betting_s", "decision_s", "dealer_idle_s", "stop_timeout_s"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise invalid(name, "a positive number of seconds", value)
        if self.rounds_after_cut_card not in (0, 1) or isinstance(self.rounds_after_cut_card, bool):
            raise invalid(
                "rounds_after_cut_card",
                "0 (the cut card's round is the last) or 1 (one more round)",
                self.rounds_after_cut_card,
            )
        if not isinstance(self.camera_cross_check, bool):
            raise invalid("camera_cross_check", "true or false", self.camera_cross_check)
        _check_variant(self.variant, "variant")
        if not isinstance(self.journal_path, Path):
            raise invalid("journal_path", "a path")

    def operational(self) -> OperationalSettings:
        """The settings that may change while a journal lives (from the next round on)."""
        return OperationalSettings(
            betting_s=self.betting_s,
            decision_s=self.decision_s,
            dealer_idle_s=self.dealer_idle_s,
            rounds_after_cut_card=self.rounds_after_cut_card,
            camera_cross_check=self.camera_cross_check,
        )

    def binding_fingerprint(self) -> dict[str, Any]:
        """The settings that give a journal's rows their meaning: the table, the game and
        its rule variant. A journal is replayed only under these."""
        return {
            "table_id": self.table_id,
            "game": self.game,
            STORED_VARIANT: self.variant,
        }

    def rules_fingerprint(self) -> dict[str, Any]:
        """Every setting that changes how events act on the state (all but the journal's
        path): a journal may only be replayed under the settings it was written with."""
        return {
            "table_id": self.table_id,
            "game": self.game,
            "betting_s": self.betting_s,
            "decision_s": self.decision_s,
            "rounds_after_cut_card": self.rounds_after_cut_card,
            "dealer_idle_s": self.dealer_idle_s,
            "camera_cross_check": self.camera_cross_check,
            STORED_VARIANT: self.variant,
        }

    @classmethod
    def from_fingerprint(cls, stored: Mapping[str, Any], journal_path: Path) -> TableConfig:
        """The config a journal recorded (its :meth:`rules_fingerprint`), the variant under
        either name; TypeError for a key no config has."""
        values = dict(stored)
        if STORED_VARIANT in values and "variant" in values:
            raise TypeError(f"both variant and {STORED_VARIANT} are recorded")
        if STORED_VARIANT in values:
            values["variant"] = values.pop(STORED_VARIANT)
        return cls(**values, journal_path=journal_path)


_KEYS: Final = {
    "id": "table_id",
    "game": "game",
    "betting_s": "betting_s",
    "decision_s": "decision_s",
    "rounds_after_cut_card": "rounds_after_cut_card",
    "dealer_idle_s": "dealer_idle_s",
    "camera_cross_check": "camera_cross_check",
    "journal_path": "journal_path",
    "variant": "variant",
    "baccarat_mode": "variant",  # the variant's older name, still read
    "stop_timeout_s": "stop_timeout_s",
}


def _check_variant(value: object, key: str) -> None:
    """ConfigurationError naming ``key`` unless ``value`` is a variant a table may have."""
    if value not in BACCARAT_MODES:
        raise unknown_choice(key, value, BACCARAT_MODES)


def table_config_from_mapping(
    data: dict[str, Any], base_dir: Path | None = None, environ: dict[str, str] | None = None
) -> TableConfig:
    """Build a :class:`TableConfig` from the ``[table]`` table of a parsed TOML document."""
    section = data.get("table")
    if not isinstance(section, dict):
        raise ConfigurationError("the configuration has no [table] section")
    check_keys(section, _KEYS, "table")
    if "variant" in section and "baccarat_mode" in section:
        raise ConfigurationError("[table] give variant or baccarat_mode (its older name), not both")
    for key in ("variant", "baccarat_mode"):
        if key in section:
            _check_variant(section[key], key)  # named as the file names it
    values: dict[str, Any] = {_KEYS[key]: value for key, value in section.items()}
    environ = os.environ if environ is None else environ
    # No defaults for these two: a table without its id would run as "table", whose messages
    # the studio ACL drops, and a journal without a path would land in whatever folder the
    # daemon was started from. LIVETABLE_JOURNAL_PATH stands in for the key (containers).
    if "id" not in section:
        raise ConfigurationError("[table] needs id")
    journal = environ.get(JOURNAL_PATH_ENV) or values.get("journal_path")
    if journal is None:
        raise ConfigurationError("[table] needs journal_path")
    if not isinstance(journal, str) or not journal:
        raise invalid("journal_path", "a non-empty string")
    path = Path(journal)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    values["journal_path"] = path
    return TableConfig(**values)
