"""Every configuration reader words its refusals alike (controller/kernel/config_file.py): an
unknown key, a value of the wrong type or out of range, and a name that is none of the
choices, the nearest one named as ``livetable rules replay`` names it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from controller.console.config import config_from_mapping as console_config
from controller.kernel.errors import ConfigurationError
from controller.service.config import config_from_mapping as table_file_config
from drivers.camera_reader import ReaderConfig

TABLE = '[table]\nid = "t7"\ngame = "baccarat"\njournal_path = "t7.journal"\n'


def _table_file(text: str) -> str:
    with pytest.raises(ConfigurationError) as refused:
        table_file_config(tomllib.loads(text), environ={}, check_files=False)
    return str(refused.value)


def _console(text: str) -> str:
    with pytest.raises(ConfigurationError) as refused:
        console_config(tomllib.loads(text), check_files=False)
    return str(refused.value)


def _vision(mapping: dict[str, object]) -> str:
    with pytest.raises(ConfigurationError) as refused:
        ReaderConfig.from_mapping(mapping, environ={})
    return str(refused.value)


def test_an_unknown_key_reads_the_same_in_every_section() -> None:
    assert _table_file(TABLE + "colour = 3\n") == "unknown keys in [table]: colour"
    assert _table_file(TABLE + "[mqtt]\ncolour = 3\n") == "unknown keys in [mqtt]: colour"
    assert _console("[broker]\ncolour = 3\n") == "unknown keys in [broker]: colour"
    assert _vision({"dek": "a.npz", "colour": 3}) == "unknown keys in [vision]: colour, dek"


def test_a_bad_value_reads_the_same_in_every_section() -> None:
    assert _table_file(TABLE + "[mqtt]\nport = 0\n") == "[mqtt] port must be 1-65535, not 0"
    assert _console("[broker]\nport = 0\n") == "[broker] port must be 1-65535, not 0"
    assert _vision({"frames": 0}) == "[vision] frames must be 1..25, not 0"
    assert _vision({"frames": 2.5}) == "[vision] frames must be a whole number, not 2.5"
    assert _table_file(TABLE + "betting_s = 0\n") == (
        "betting_s must be a positive number of seconds, not 0"
    )


def test_a_secret_is_never_shown_in_a_refusal() -> None:
    message = _table_file(TABLE + '[mqtt]\nusername = "u"\npassword = ["hunter2"]\n')
    assert message == "[mqtt] password must be a string" and "hunter2" not in message


def test_a_misspelt_choice_names_the_nearest_one() -> None:
    message = _table_file(TABLE.replace('"baccarat"', '"bacarat"'))
    assert message.startswith("unknown game 'bacarat': did you mean 'baccarat'? (expected ")
    message = _table_file(TABLE + 'variant = "no-comission"\n')
    assert message == (
        "unknown variant 'no-comission': did you mean 'no-commission'? "
        "(expected traditional or no-commission)"
    )


def test_the_console_reader_and_the_table_reader_load_their_good_files(tmp_path: Path) -> None:
    # The helpers refuse only what is wrong: a file with every key right loads.
    assert console_config(tomllib.loads('[broker]\nhost = "h"\nport = 1884\n')).broker.port == 1884
    config = table_file_config(tomllib.loads(TABLE), base_dir=tmp_path, environ={})
    assert config.table.journal_path == tmp_path / "t7.journal"


SHOE = TABLE + '[shoe]\nport = "/dev/ttyUSB0"\n'


def test_the_shoe_section_words_its_refusals_alike() -> None:
    assert _table_file(SHOE + "colour = 3\n") == "unknown keys in [shoe]: colour"
    assert _table_file(SHOE + "[shoe.angel-eye]\ncolour = 3\n") == (
        "unknown keys in [shoe.angel-eye]: colour"
    )
    assert _table_file(SHOE + 'baudrate = "fast"\n') == "[shoe] baudrate must be int, not 'fast'"
    message = _table_file(SHOE + 'protocol = "angeleye"\n')
    assert message.startswith("unknown shoe protocol 'angeleye': did you mean 'angel-eye'? ")
