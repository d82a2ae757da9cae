"""The journal's event encoding is a format of its own: old journals replay identically, and
an encoding never changes without a new version number.

``tests/fixtures/journals/`` holds journals of every event encoding with what replaying them
gave when they were written (see its README): livetable 0.1.0's of encoding 1 at the top,
encoding 2's in ``v2/``, encoding 3's in ``v3/``, and so on.
``tests/fixtures/event_encoding/vN.json`` holds the schema of each encoding version as it
was released.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from controller.games.registry import GAME_IDS
from controller.service.journal import Journal
from controller.service.journaled_table import JournaledTable, config_of, machine_revision, replay
from controller.table.config import TableConfig
from controller.table.effects import PublishEvent
from controller.table.events import ENCODINGS, EVENT_ENCODING, encoding_schema
from controller.table.machine import TableMachine

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# Each event encoding's fixture journals: their folder and the machine revision they were
# written under.
FIXTURE_SETS: dict[int, tuple[Path, int]] = {
    1: (FIXTURES / "journals", 1),
    2: (FIXTURES / "journals" / "v2", 2),
    3: (FIXTURES / "journals" / "v3", 4),
    4: (FIXTURES / "journals" / "v4", 5),
    5: (FIXTURES / "journals" / "v5", 6),
    6: (FIXTURES / "journals" / "v6", 6),
    7: (FIXTURES / "journals" / "v7", 6),
}
OLD_JOURNALS = [
    pytest.param(encoding, path, revision, id=f"v{encoding}-{path.stem}")
    for encoding, (folder, revision) in FIXTURE_SETS.items()
    for path in sorted(folder.glob("*.journal"))
]


def expected_of(journal_path: Path) -> dict[str, Any]:
    return json.loads(journal_path.with_suffix(".expected.json").read_text())


def _initial_settings(journal: Journal) -> Any:
    return config_of(journal).operational()


# The games of livetable 0.1.0, which wrote the first journals.
FIRST_GAMES = {"baccarat", "blackjack-boundless", "blackjack-classic", "blackjack-21"}


def test_every_encoding_has_old_journals_for_every_game_of_its_time() -> None:
    """Every encoding's journals hold every game there was when it was written (a game
    added later has none in an older encoding), a game once there is in every later
    encoding, and the newest encoding's hold every game."""
    assert set(FIXTURE_SETS) == set(ENCODINGS), "a new encoding needs fixture journals"
    games = FIRST_GAMES
    for encoding in sorted(FIXTURE_SETS):
        folder, _revision = FIXTURE_SETS[encoding]
        held = {path.stem for path in folder.glob("*.journal")}
        assert games <= held <= set(GAME_IDS), folder
        games = held
    assert games == set(GAME_IDS), "the newest encoding needs a journal of every game"


@pytest.mark.parametrize("encoding", sorted(FIXTURE_SETS))
def test_the_journals_of_an_encoding_hold_every_kind_it_writes(encoding: int) -> None:
    # Together they hold every kind. From encoding 2 on, each also holds every kind its
    # encoding added (encoding 2: the camera's news and SettingsChanged), so those rows are
    # replayed in every game.
    folder, _revision = FIXTURE_SETS[encoding]
    added = set(ENCODINGS[encoding]) - set(ENCODINGS.get(encoding - 1, {}))
    seen: set[str] = set()
    for path in sorted(folder.glob("*.journal")):
        with Journal(path, read_only=True) as journal:
            kinds = {entry.kind for entry in journal.verified_entries()}
        if encoding > 1:
            assert added <= kinds, f"{path.name} lacks {sorted(added - kinds)}"
        seen |= kinds
    assert seen == set(ENCODINGS[encoding])


@pytest.mark.parametrize(("encoding", "journal_path", "revision"), OLD_JOURNALS)
def test_an_old_journal_replays_to_the_state_it_had(
    encoding: int, journal_path: Path, revision: int
) -> None:
    expected = expected_of(journal_path)
    beside = set(journal_path.parent.iterdir())
    # Opened as evidence: read-only, nothing is written beside it (see read_only_uri).
    with Journal(journal_path, read_only=True) as journal:
        assert journal.event_encoding == encoding
        assert journal.verify() == expected["rows"]
        assert journal.last_hash == expected["head"]
        config = config_of(journal)
        assert config.rules_fingerprint() == expected["config"]
        assert machine_revision(journal) == revision
        machine = TableMachine(config, _initial_settings(journal), revision=revision)
        settled: list[dict[str, Any]] = []
        snapshots: dict[str, dict[str, Any]] = {}
        for entry in journal.verified_entries():
            for effect in machine.handle(entry.event()):
                if isinstance(effect, PublishEvent) and effect.name == "round_settled":
                    settled.append(effect.payload)
            if str(entry.seq) in expected["snapshots"]:
                snapshots[str(entry.seq)] = machine.snapshot()
    assert set(journal_path.parent.iterdir()) == beside
    assert settled == expected["round_settled"]
    for seq, then in expected["snapshots"].items():
        # Today's snapshot may know more (keys added since); what it knew then is unchanged.
        assert known_then(snapshots[seq], then) == then, f"state after row {seq}"


def known_then(now: Any, then: Any) -> Any:
    """``now`` restricted to the keys ``then`` had, at every depth."""
    if isinstance(now, dict) and isinstance(then, dict):
        return {key: known_then(now.get(key), value) for key, value in then.items()}
    if isinstance(now, list) and isinstance(then, list) and len(now) == len(then):
        return [known_then(a, b) for a, b in zip(now, then, strict=True)]
    return now


@pytest.mark.parametrize(
    ("encoding", "journal_path", "revision"),
    [param for param in OLD_JOURNALS if param.values[1].stem in GAME_IDS[:2]],
)
def test_an_old_journal_takes_new_rows_and_still_verifies(
    encoding: int, journal_path: Path, revision: int, tmp_path: Path
) -> None:
    copy = tmp_path / journal_path.name  # the table appends to it
    shutil.copy(journal_path, copy)
    with Journal(copy, read_only=True) as journal:
        config = dataclasses.replace(config_of(journal), journal_path=copy)
        replayed = replay(journal, config, _initial_settings(journal))
        before = replayed.snapshot()
    # Restarted with the settings the journal ended with: the start journals one row.
    latest = replayed.state.pending_settings or replayed.settings
    config = dataclasses.replace(config, **latest.to_dict())
    table, _effects = JournaledTable.open(config, at=2_000_000_000.0)
    try:
        assert table.journal.event_encoding == EVENT_ENCODING
        live = table.machine.snapshot()
    finally:
        table.close()
    assert live["round_log"] == before["round_log"]
    with Journal(copy, read_only=True) as journal:
        assert journal.verify() == expected_of(journal_path)["rows"] + 1
        assert replay(journal, config, _initial_settings(journal)).snapshot() == live


def encoding_mismatches(version: int, recorded: dict[str, dict[str, str]]) -> list[str]:
    """What encoding ``version`` writes today that differs from its recorded schema."""
    today = encoding_schema(version)
    problems = []
    for kind in sorted(set(today) | set(recorded)):
        if today.get(kind) != recorded.get(kind):
            problems.append(f"{kind}: recorded {recorded.get(kind)}, today {today.get(kind)}")
    return problems


@pytest.mark.parametrize("version", sorted(ENCODINGS))
def test_an_encoding_never_changes_without_a_new_version(version: int) -> None:
    record = FIXTURES / "event_encoding" / f"v{version}.json"
    assert record.is_file(), f"encoding {version} has no recorded schema: record it once"
    problems = encoding_mismatches(version, json.loads(record.read_text()))
    assert not problems, (
        f"event encoding {version} changed; give the change a new version instead: {problems}"
    )


def test_the_current_encoding_writes_every_field_of_every_event() -> None:
    # A field added to an event class but not to the encoding would be lost in the journal.
    for kind, (cls, names) in ENCODINGS[EVENT_ENCODING].items():
        assert tuple(field.name for field in dataclasses.fields(cls)) == names, kind


def test_a_renamed_field_is_caught() -> None:
    recorded = encoding_schema(EVENT_ENCODING)
    renamed = {**recorded, "CardDrawn": {**recorded["CardDrawn"]}}
    renamed["CardDrawn"]["face"] = renamed["CardDrawn"].pop("card")
    assert encoding_mismatches(EVENT_ENCODING, renamed) == [
        f"CardDrawn: recorded {renamed['CardDrawn']}, today {recorded['CardDrawn']}"
    ]


def test_a_journal_from_a_newer_livetable_is_refused_with_a_clear_message(
    tmp_path: Path,
) -> None:
    path = tmp_path / "newer.journal"
    config = TableConfig(journal_path=path)
    table, _ = JournaledTable.open(config, at=1.0)
    table.journal.set_meta("event_encoding", str(EVENT_ENCODING + 1))
    table.close()
    with pytest.raises(Exception, match=f"event encoding {EVENT_ENCODING + 1}"):
        Journal(path, read_only=True)
