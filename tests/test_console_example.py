"""The example console configuration loads with the console's own loader, as shipped."""

from __future__ import annotations

from pathlib import Path

from controller.console.config import load_console_config

EXAMPLE = (
    Path(__file__).resolve().parent.parent / "systemd" / "examples" / "console" / "console.toml"
)


def test_the_example_console_configuration_loads() -> None:
    # The CA file lives on the studio PC, not here: its presence is not checked.
    config = load_console_config(EXAMPLE, check_files=False)
    assert (config.host, config.port) == ("127.0.0.1", 8080)
    assert config.broker.tls_ca == Path("/etc/livetable/ca.crt")
    assert config.certificate is None and config.key is None
