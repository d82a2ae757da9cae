"""The table's TOML configuration and the `livetable journal` commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from controller.kernel.errors import ConfigurationError
from controller.service.config import load_camera_config, load_config
from controller.service.journaled_table import JournaledTable
from controller.table.config import TableConfig, table_config_from_mapping
from controller.tools.cli import main
from tests.table.driver import Driver, config_for

GOOD = """
[table]
id = "t7"
game = "blackjack-classic"
betting_s = 12
decision_s = 9.5
rounds_after_cut_card = 1
dealer_idle_s = 45
camera_cross_check = true
journal_path = "journal/t7.sqlite"
"""


def test_a_full_toml_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "table.toml"
    path.write_text(GOOD)
    config = load_config(path, environ={}).table
    assert config == TableConfig(
        table_id="t7",
        game="blackjack-classic",
        betting_s=12,
        decision_s=9.5,
        rounds_after_cut_card=1,
        dealer_idle_s=45,
        camera_cross_check=True,
        journal_path=tmp_path / "journal" / "t7.sqlite",
    )
    with pytest.raises(AttributeError):
        config.game = "baccarat"  # type: ignore[misc]


def test_the_environment_overrides_the_journal_path(tmp_path: Path) -> None:
    path = tmp_path / "table.toml"
    path.write_text(GOOD)
    config = load_config(path, environ={"LIVETABLE_JOURNAL_PATH": "/data/t7.journal"}).table
    assert config.journal_path == Path("/data/t7.journal")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('game = "poker"', "unknown game"),
        ("betting_s = 0", "betting_s must be a positive"),
        ("decision_s = -1", "decision_s must be a positive"),
        ('dealer_idle_s = "soon"', "dealer_idle_s must be a positive"),
        ("rounds_after_cut_card = 2", "rounds_after_cut_card must be 0"),
        ('camera_cross_check = "yes"', "camera_cross_check must be true or false"),
        ('baccarat_mode = "cheap"', "unknown baccarat_mode"),
        ("colour = 3", "unknown keys in \\[table\\]: colour"),
        ('id = ""', "table id"),
    ],
)
def test_bad_settings_are_refused_with_a_clear_error(line: str, message: str) -> None:
    import tomllib

    # Every required key but the one the line sets (id and journal_path have no default).
    required = {"id": '"t7"', "game": '"baccarat"', "journal_path": '"t7.journal"'}
    given = line.split("=")[0].strip()
    base = "".join(f"{key} = {value}\n" for key, value in required.items() if key != given)
    data = tomllib.loads(f"[table]\n{base}{line}\n")
    with pytest.raises(ConfigurationError, match=message):
        table_config_from_mapping(data, environ={})


def test_unreadable_or_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"missing\.toml does not exist"):
        load_config(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[table\n")
    with pytest.raises(ConfigurationError, match="not valid TOML"):
        load_config(broken)
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    with pytest.raises(ConfigurationError, match=r"no \[table\]"):
        load_config(empty)


MQTT = """
[mqtt]
host = "localhost"
username = "livetable-t7"
password_file = "t7.mqtt-password"
"""


def _refusal(path: Path, text: str) -> str:
    """The one message ``load_config`` refuses ``text`` with (written to ``path``)."""
    path.write_text(text)
    with pytest.raises(ConfigurationError) as refused:
        load_config(path, environ={})
    return str(refused.value)


def test_a_bad_mqtt_key_is_refused_naming_the_key_and_the_file(tmp_path: Path) -> None:
    (tmp_path / "t7.mqtt-password").write_text("secret\n")
    path = tmp_path / "t7.toml"
    path.write_text(GOOD + MQTT)
    assert load_config(path, environ={}).mqtt.password == "secret"  # type: ignore[union-attr]
    message = _refusal(path, GOOD + MQTT + "colour = 3\n")
    assert message == f"{path}: unknown keys in [mqtt]: colour"
    message = _refusal(path, GOOD + MQTT + "keepalive_s = 2\n")
    assert message.startswith(f"{path}: [mqtt] keepalive_s must be") and "secret" not in message


def test_a_bad_mqtt_tls_path_is_refused_naming_the_key_and_the_file(tmp_path: Path) -> None:
    (tmp_path / "t7.mqtt-password").write_text("secret\n")
    (tmp_path / "ca.pem").write_text("not checked here\n")
    path = tmp_path / "t7.toml"
    tls = MQTT + '[mqtt.tls]\nca_file = "ca.pem"\n'
    path.write_text(GOOD + tls)
    assert load_config(path, environ={}).mqtt.tls.ca_file == tmp_path / "ca.pem"  # type: ignore[union-attr]
    missing = tmp_path / "t7.pem"
    message = _refusal(path, GOOD + tls + 'cert_file = "t7.pem"\nkey_file = "ca.pem"\n')
    assert message == f"{path}: [mqtt.tls] cert_file {missing} does not exist"
    message = _refusal(path, GOOD + tls + 'certfile = "t7.pem"\n')
    assert message == f"{path}: unknown keys in [mqtt.tls]: certfile"


@pytest.mark.parametrize(
    ("section", "line", "key"),
    [
        ("[table]", "colour = 3", "colour"),
        ("[table]", "betting_s = 0", "betting_s"),
        ("[shoe]", 'parity = "X"', "parity"),
        ("[shoe]", 'variant = "mod11"', "variant"),
        ("[camera]", "colour = 3", "colour"),
        ("[mqtt]", "port = 0", "port"),
        ("[vision]", "colour = 3", "colour"),
    ],
)
def test_every_section_is_refused_in_one_format(
    tmp_path: Path, section: str, line: str, key: str
) -> None:
    # One loader for every section: the file, then what is wrong, naming the key.
    sections = {
        "[table]": 'id = "t7"\ngame = "baccarat"\njournal_path = "t7.journal"',
        "[shoe]": 'port = "/dev/ttyUSB0"',
        "[camera]": "source = 0\nresolution = [640, 360]",
        "[vision]": 'deck = "t7.npz"',
        "[mqtt]": 'host = "localhost"',
    }
    sections[section] += f"\n{line}"
    (tmp_path / "t7.npz").touch()  # a camera table has its deck; only its name is checked
    path = tmp_path / "t7.toml"
    message = _refusal(path, "".join(f"{name}\n{body}\n" for name, body in sections.items()))
    assert message.startswith(f"{path}: ") and message.count(str(path)) == 1, message
    assert re.search(rf"\b{key}\b", message.removeprefix(f"{path}: ")), message


def test_the_camera_loader_maps_errors_as_the_table_loader_does(tmp_path: Path) -> None:
    path = tmp_path / "camera.toml"
    path.write_text("[studio.camera]\nsource = 0\nresolution = [640, 360]\n")
    assert load_camera_config(path, "studio.camera").width == 640
    path.write_text("[camera]\nsource = 0\nresolution = [640, 360]\ncolour = 3\n")
    with pytest.raises(ConfigurationError) as refused:
        load_camera_config(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and message.count(str(path)) == 1, message
    assert "colour" in message
    path.write_text('[table]\nid = "t7"\n')
    with pytest.raises(ConfigurationError, match=rf"^{re.escape(str(path))} has no \[camera\]"):
        load_camera_config(path)


@pytest.fixture
def journal_with_two_rounds(tmp_path: Path) -> Path:
    config = config_for("baccarat", tmp_path)
    table, _ = JournaledTable.open(config, at=1.0)
    driver = Driver(table)
    try:
        driver.new_shoe()
        for cards in (("9S", "TD", "KC", "3H"), ("8S", "TC", "KD", "3D")):
            driver.open_and_close_betting()
            driver.draw(*cards)
    finally:
        table.close()
    return config.journal_path


def test_journal_verify(journal_with_two_rounds: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["journal", "verify", str(journal_with_two_rounds)]) == 0
    assert "rows, hash chain intact" in capsys.readouterr().out


def test_journal_verify_reports_a_broken_chain(
    journal_with_two_rounds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    with sqlite3.connect(journal_with_two_rounds) as db:
        db.execute("UPDATE events SET body = replace(body, 'KC', 'KH') WHERE kind = 'CardDrawn'")
    assert main(["journal", "verify", str(journal_with_two_rounds)]) == 1
    assert "was altered" in capsys.readouterr().err


def test_journal_export_prints_one_round(
    journal_with_two_rounds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "export", str(journal_with_two_rounds), "--round", "2", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    cards = [line["event"]["card"] for line in lines if line["kind"] == "CardDrawn"]
    assert cards == ["8S", "TC", "KD", "3D"]
    settled = [
        effect
        for line in lines
        for effect in line["effects"]
        if effect.get("name") == "round_settled"
    ]
    assert settled[0]["payload"]["round_id"] == 2


def test_journal_export_of_an_unknown_round_or_file(
    journal_with_two_rounds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", "export", str(journal_with_two_rounds), "--round", "9"]) == 1
    assert "round 9 is not in" in capsys.readouterr().err
    assert main(["journal", "verify", str(tmp_path / "nothing")]) == 1
    assert "no journal" in capsys.readouterr().err


def test_bench_journal_year_starts_from_a_checkpoint_and_samples_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "journal-year", "--days", "2", "--rows-per-day", "600", "--rounds", "20"]
    assert main([*argv, "--dir", str(tmp_path), "--json", "--full-replay"]) == 0
    report = json.loads(capsys.readouterr().out)
    journal = report["journal"]
    assert journal["rows"] == 1200 and journal["shoes"] >= 2 and journal["bytes"] > 0
    assert report["start_at_quarter"]["rows"] == 300
    start = report["start"]
    assert start["start_s"] >= 0 and start["full_replay_s"] >= 0
    assert start["rss_after_start_mib"] > 0 and start["play_rounds"] == 20
    assert len(start["play_rss_mib"]) >= 2
    assert list(tmp_path.iterdir()) == []  # the test journal is gone


def test_bench_table_reports_percentiles_without_judging_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "table", "--events", "300", "--appends", "10", "--dir", str(tmp_path)]
    assert main([*argv, "--game", "baccarat", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (handle,) = report["handle"]
    assert handle["game"] == "baccarat" and handle["events"] == 300 and handle["rounds"] > 0
    assert set(handle["handle_us"]) == {"p50", "p90", "p99", "max"}
    assert report["journal"]["appends"] == 10
    assert list(tmp_path.iterdir()) == []  # the test journal is gone
