"""The example table configurations (systemd/examples) load with the loader the daemon uses,
and each is consistent with the table id it names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.games.registry import GAME_IDS, game_spec
from controller.kernel.errors import ConfigurationError
from controller.service.config import LivetableConfig, load_config
from drivers.shoe.registry import PROTOCOL_NAMES

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "systemd" / "examples"
FILES = sorted(EXAMPLES.glob("*.toml"))
CAMERA_EXAMPLE = EXAMPLES / "blackjack-classic-angel-eye-camera.toml"
# A deck enrolled by `livetable demo`'s code, kept for the camera tests.
A_DECK = REPO_ROOT / "tests" / "fixtures" / "camera" / "plastic-demo-deck.npz"
LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]


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


def _run(config: Path, **environ: str) -> subprocess.CompletedProcess[str]:
    """``livetable run`` on ``config``, as a service starts it (none of the test's own
    LIVETABLE_ variables)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVETABLE_")}
    return subprocess.run(
        [*LIVETABLE, "run", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, **environ},
        cwd=REPO_ROOT,
        check=False,
    )


def test_the_camera_example_names_the_deck_its_engineer_enrols() -> None:
    # The generic model misreads some designs surely (one's clubs as spades): a camera
    # table reads with the studio's own deck, which the example names and says how to make.
    config = _load(CAMERA_EXAMPLE)
    assert config.camera is not None and config.vision is not None
    tid = config.table.table_id
    deck = config.vision.deck
    assert deck == Path(f"/etc/livetable/decks/{tid}.npz")
    text = CAMERA_EXAMPLE.read_text()
    assert f"livetable camera enrol --config /etc/livetable/{tid}.toml" in text
    assert f"-o {deck}" in text
    slot = text.split("--slot ", 1)[1].split()[0]
    assert slot in config.camera.regions


def test_run_refuses_the_camera_example_until_its_deck_is_enrolled() -> None:
    refused = _run(CAMERA_EXAMPLE)
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert lines[0].startswith(f"livetable: error: {CAMERA_EXAMPLE}: "), lines
    assert "/etc/livetable/decks/t4.npz" in lines[0] and "livetable camera enrol" in lines[0]
    # With a deck where the configuration says (here through the containers' override), the
    # deck is no longer what stops it: the next thing missing on this machine is.
    past = _run(CAMERA_EXAMPLE, LIVETABLE_VISION_DECK=str(A_DECK))
    assert past.returncode == 1
    assert "enrol" not in past.stderr and "t4.mqtt-password" in past.stderr, past.stderr


def test_a_camera_without_a_deck_is_refused_in_one_line(tmp_path: Path) -> None:
    text = CAMERA_EXAMPLE.read_text()
    # The example without its [vision] table: the camera would read with the generic model.
    lines = text.splitlines(keepends=True)
    if "[vision]\n" in lines:
        start = lines.index("[vision]\n")
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("["))
        lines[start:end] = []
    path = tmp_path / "t4.toml"
    path.write_text("".join(lines))
    with pytest.raises(ConfigurationError) as refused:
        load_config(path, environ={}, check_files=False)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{path}: "), message
    assert "[vision] deck" in message and "livetable camera enrol" in message, message
    ran = _run(path)
    assert ran.returncode == 1 and ran.stderr.count("\n") == 1, ran.stderr
    assert "livetable camera enrol" in ran.stderr, ran.stderr
