"""The example table configurations (systemd/examples) load with the loaders the daemon uses,
and each is consistent with the table id it names."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from controller.table_config import BACCARAT_MODES, GAME_IDS, load_table_config
from drivers.camera import CameraConfig
from drivers.shoe.driver import ShoeConfig

EXAMPLES = Path(__file__).resolve().parent.parent / "systemd" / "examples"
FILES = sorted(EXAMPLES.glob("*.toml"))

MQTT_KEYS = {
    "host",
    "port",
    "client_id",
    "username",
    "password",
    "password_file",
    "protocol",
    "keepalive_s",
    "topic_prefix",
    "tls",
}
TLS_KEYS = {"ca_file", "cert_file", "key_file"}


def _read(path: Path) -> dict[str, Any]:
    with open(path, "rb") as file:
        return tomllib.load(file)


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_example_loads_and_names_its_table_consistently(path: Path) -> None:
    table = load_table_config(path, environ={})
    data = _read(path)
    shoe = ShoeConfig.from_mapping(data["shoe"])
    assert shoe.effective_baudrate > 0
    if "camera" in data:
        CameraConfig.from_mapping(data["camera"])

    tid = table.table_id
    assert table.journal_path == Path(f"/var/lib/livetable/{tid}.journal")
    assert f"/etc/livetable/{tid}.toml" in path.read_text()

    mqtt = data["mqtt"]
    assert set(mqtt) <= MQTT_KEYS, sorted(set(mqtt) - MQTT_KEYS)
    assert set(mqtt.get("tls", {})) <= TLS_KEYS
    assert not ("password" in mqtt and "password_file" in mqtt)
    assert mqtt["client_id"] == mqtt["username"] == f"livetable-{tid}"
    assert mqtt["password_file"] == f"/etc/livetable/{tid}.mqtt-password"
    assert mqtt["protocol"] in ("3.1.1", "5")
    assert mqtt["topic_prefix"] == "livetable"
    assert isinstance(mqtt["port"], int) and isinstance(mqtt["keepalive_s"], int | float)
    if "tls" in mqtt:
        assert "ca_file" in mqtt["tls"] and mqtt["port"] == 8883


def test_examples_cover_every_game_mode_and_shoe_protocol() -> None:
    tables = [load_table_config(path, environ={}) for path in FILES]
    shoes = [ShoeConfig.from_mapping(_read(path)["shoe"]) for path in FILES]
    assert {table.game for table in tables} == set(GAME_IDS)
    assert {t.baccarat_mode for t in tables if t.game == "baccarat"} == set(BACCARAT_MODES)
    assert {shoe.protocol for shoe in shoes} == {"angel-eye", "ascii", "native"}
    ids = [table.table_id for table in tables]
    assert len(set(ids)) == len(ids)


def test_the_readme_lists_every_example() -> None:
    readme = (EXAMPLES / "README.md").read_text()
    for path in FILES:
        assert f"`{path.name}`" in readme
