"""The example console configuration loads with the console's own loader, as shipped."""

from __future__ import annotations

import re
from pathlib import Path

from controller.console.config import load_console_config

EXAMPLE = Path(__file__).resolve().parents[2] / "systemd" / "examples" / "console" / "console.toml"


def test_the_example_console_configuration_loads() -> None:
    # The CA file lives on the studio PC, not here: its presence is not checked.
    config = load_console_config(EXAMPLE, check_files=False)
    assert (config.host, config.port) == ("127.0.0.1", 8080)
    assert config.broker.tls_ca == Path("/etc/livetable/ca.pem")
    assert config.certificate is None and config.key is None


def test_the_example_trusts_the_ca_file_the_install_guide_installs() -> None:
    """docs/install.md 3.7 installs the studio CA on each PC under one name; the console's
    example and its page must name that same file, or the console does not start."""
    guide = (EXAMPLE.parents[3] / "docs" / "install.md").read_text()
    installed = re.findall(r'install -m 644 "\$CA_DIR/([\w.]+)" "\$LIVETABLE_ETC/([\w.]+)"', guide)
    assert installed, "docs/install.md no longer installs the studio CA"
    (_source, name), *_ = installed
    config = load_console_config(EXAMPLE, check_files=False)
    assert config.broker.tls_ca == Path("/etc/livetable") / name
    console_page = (EXAMPLE.parents[3] / "docs" / "console.md").read_text()
    for page in (guide, console_page):
        assert "ca.crt" not in page
