"""A table's rule variant is ``variant`` in the code and in a new file; ``baccarat_mode``, its
older name, is read in a file and is the name journals record it under, so a journal written
before or after the rename binds and replays alike."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from controller.kernel.errors import ConfigurationError, JournalError
from controller.service.journal import Journal
from controller.service.journaled_table import (
    CONFIG_META_KEY,
    JournaledTable,
    config_of,
    replay,
)
from controller.table.config import TableConfig, table_config_from_mapping
from tests.table.driver import Driver, config_for

BASE = '[table]\nid = "t7"\ngame = "baccarat"\njournal_path = "t7.journal"\n'


def _table(lines: str) -> TableConfig:
    return table_config_from_mapping(tomllib.loads(BASE + lines), environ={})


@pytest.mark.parametrize("key", ["variant", "baccarat_mode"])
def test_a_file_names_the_variant_either_way(key: str) -> None:
    assert _table(f'{key} = "no-commission"\n').variant == "no-commission"
    assert _table("").variant == "traditional"


def test_a_file_that_gives_both_names_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigurationError) as refused:
        _table('variant = "traditional"\nbaccarat_mode = "traditional"\n')
    message = str(refused.value)
    assert "variant" in message and "baccarat_mode" in message and "\n" not in message


def test_an_unknown_variant_is_named_by_the_key_the_file_used() -> None:
    with pytest.raises(ConfigurationError, match="unknown variant 'cheap'"):
        _table('variant = "cheap"\n')
    with pytest.raises(ConfigurationError, match="unknown baccarat_mode 'cheap'"):
        _table('baccarat_mode = "cheap"\n')


def _played(tmp_path: Path, variant: str) -> Path:
    config = config_for("baccarat", tmp_path, variant=variant)
    table, _ = JournaledTable.open(config, at=1.0)
    try:
        driver = Driver(table)
        driver.new_shoe()
        driver.open_and_close_betting()
        driver.draw("9S", "TD", "KC", "3H")
    finally:
        table.close()
    return config.journal_path


def _replayed(path: Path) -> dict[str, object]:
    with Journal(path, read_only=True) as journal:
        return replay(journal, config_of(journal)).snapshot()


def test_a_journal_records_the_variant_under_its_stored_name(tmp_path: Path) -> None:
    path = _played(tmp_path, "no-commission")
    with Journal(path, read_only=True) as journal:
        recorded = json.loads(journal.meta(CONFIG_META_KEY) or "{}")
        assert recorded["baccarat_mode"] == "no-commission" and "variant" not in recorded
        assert config_of(journal).variant == "no-commission"


def test_a_journal_that_records_variant_opens_and_binds_too(tmp_path: Path) -> None:
    path = _played(tmp_path, "no-commission")
    before = _replayed(path)
    with Journal(path) as journal:
        recorded = json.loads(journal.meta(CONFIG_META_KEY) or "{}")
        recorded["variant"] = recorded.pop("baccarat_mode")
        journal.set_meta(CONFIG_META_KEY, json.dumps(recorded))
    with Journal(path, read_only=True) as journal:
        assert config_of(journal).variant == "no-commission"
    assert _replayed(path) == before
    config = config_for("baccarat", tmp_path, variant="no-commission")
    table, _ = JournaledTable.open(config, at=2.0)
    try:
        assert table.replayed_rows > 0
    finally:
        table.close()
    with pytest.raises(ConfigurationError, match="another table or game"):
        JournaledTable.open(config_for("baccarat", tmp_path), at=3.0)


def test_a_journal_that_records_both_names_is_unreadable(tmp_path: Path) -> None:
    path = _played(tmp_path, "traditional")
    with Journal(path) as journal:
        recorded = json.loads(journal.meta(CONFIG_META_KEY) or "{}")
        journal.set_meta(CONFIG_META_KEY, json.dumps({**recorded, "variant": "traditional"}))
    with Journal(path, read_only=True) as journal, pytest.raises(JournalError, match="both"):
        config_of(journal)
