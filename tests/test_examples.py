"""The example table configurations (systemd/examples) load with the loader the daemon uses,
and each is consistent with the table id it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.games.registry import GAME_IDS, game_spec
from controller.service.config import LivetableConfig, load_config
from drivers.shoe.registry import PROTOCOL_NAMES

EXAMPLES = Path(__file__).resolve().parent.parent / "systemd" / "examples"
FILES = sorted(EXAMPLES.glob("*.toml"))


def _load(path: Path) -> LivetableConfig:
    # The password files and TLS files live on the table PC, not here: everything else in
    # the file is checked exactly as `livetable run` checks it.
    return load_config(path, environ={}, check_files=False)


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_example_loads_and_names_its_table_consistently(path: Path) -> None:
    config = _load(path)
    config.require("shoe", "mqtt")
    assert config.shoe is not None and config.shoe.effective_baudrate > 0

    tid = config.table.table_id
    assert config.table.journal_path == Path(f"/var/lib/livetable/{tid}.journal")
    assert f"/etc/livetable/{tid}.toml" in path.read_text()

    mqtt = config.mqtt
    assert mqtt is not None
    assert mqtt.client_id == mqtt.username == f"livetable-{tid}"
    assert mqtt.password is None  # not read here, and never written into the file
    assert mqtt.password_file == Path(f"/etc/livetable/{tid}.mqtt-password")
    assert mqtt.topic_prefix == "livetable"
    if mqtt.tls is not None:
        assert mqtt.port == 8883


def test_examples_cover_every_game_mode_and_shoe_protocol() -> None:
    configs = [_load(path) for path in FILES]
    tables = [config.table for config in configs]
    assert {table.game for table in tables} == set(GAME_IDS)
    modes = {table.variant for table in tables if table.game == "baccarat"}
    assert modes == set(game_spec("baccarat").variants)
    assert {config.shoe.protocol for config in configs if config.shoe} == set(PROTOCOL_NAMES)
    ids = [table.table_id for table in tables]
    assert len(set(ids)) == len(ids)


def test_the_readme_lists_every_example() -> None:
    readme = (EXAMPLES / "README.md").read_text()
    for path in FILES:
        assert f"`{path.name}`" in readme
