"""The one writer of a table's configuration: what it writes, the daemon's loader reads back
as it was meant, paths with quotes and backslashes included."""

from __future__ import annotations

from pathlib import Path

from controller.service.config import load_config
from simulators.table_config import write_table_config


def test_what_is_written_is_what_the_daemon_reads(tmp_path: Path) -> None:
    folder = tmp_path / 'a "quoted" \\ folder'
    folder.mkdir()
    shoe = folder / "shoe link"
    path = write_table_config(
        folder / "t9.toml",
        table_id="t9",
        game="blackjack-classic",
        shoe_port=shoe,
        broker_port=18830,
        betting_s=2.5,
        dealer_idle_s=30.0,
        username="table-t9",
        password='s3cr"et',
    )
    config = load_config(path)
    assert config.table.table_id == "t9" and config.table.game == "blackjack-classic"
    assert config.table.betting_s == 2.5 and config.table.dealer_idle_s == 30.0
    assert config.table.journal_path == folder / "t9.journal"
    assert config.shoe is not None and Path(config.shoe.port) == shoe
    assert config.mqtt is not None and config.mqtt.port == 18830
    assert config.mqtt.username == "table-t9" and config.mqtt.password == 's3cr"et'
    secret = folder / "t9.mqtt-password"
    assert secret.stat().st_mode & 0o777 == 0o600
