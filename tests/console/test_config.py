"""console.toml: defaults, every setting, and each mistake one line naming file and key
(from ``livetable console`` too)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.console.config import ConsoleConfig, load_console_config
from controller.kernel.errors import ConfigurationError
from tests.support.daemon import REPO_ROOT


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "console.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_an_empty_file_takes_the_defaults(tmp_path: Path) -> None:
    config = load_console_config(write(tmp_path, ""))
    assert (config.host, config.port) == ("127.0.0.1", 8080)
    assert (config.idle_timeout_s, config.stale_after_s, config.undo_s) == (900, 120, 3)
    assert not config.tls and config.origin == "http://127.0.0.1:8080"
    broker = config.broker
    assert (broker.host, broker.port, broker.protocol, broker.topic_prefix) == (
        "127.0.0.1",
        1883,
        "5",
        "livetable",
    )
    assert broker.tls_ca is None


def test_every_setting_relative_paths_beside_the_file(tmp_path: Path) -> None:
    for name in ("console.crt", "console.key", "ca.crt"):
        (tmp_path / name).write_text("x")
    config = load_console_config(
        write(
            tmp_path,
            '[console]\nlisten = "[::1]:8443"\nidle_timeout_s = 60\nstale_after_s = 30.5\n'
            "undo_s = 0\n"
            'certificate = "console.crt"\nkey = "console.key"\n'
            '[broker]\nhost = "broker.studio"\nport = 8883\nprotocol = "3.1.1"\n'
            'topic_prefix = "studio"\ntls_ca = "ca.crt"\n',
        )
    )
    assert config == ConsoleConfig(
        host="::1",
        port=8443,
        idle_timeout_s=60,
        stale_after_s=30.5,
        undo_s=0,
        certificate=tmp_path / "console.crt",
        key=tmp_path / "console.key",
        broker=config.broker,
        source=tmp_path / "console.toml",
    )
    assert config.tls and config.origin == "https://[::1]:8443"
    assert config.broker.tls_ca == tmp_path / "ca.crt"
    assert (config.broker.host, config.broker.protocol) == ("broker.studio", "3.1.1")


def test_listen_from_the_command_line_wins(tmp_path: Path) -> None:
    config = load_console_config(
        write(tmp_path, '[console]\nlisten = "0.0.0.0:80"\n'), listen="127.0.0.1:9000"
    )
    assert (config.host, config.port) == ("127.0.0.1", 9000)
    with pytest.raises(ConfigurationError, match="--listen must be HOST:PORT"):
        load_console_config(write(tmp_path, ""), listen="9000")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[console]\ncolour = 1\n", "unknown keys in [console]: colour"),
        ("[consol]\n", "unknown sections: [consol]"),
        ('[console]\nlisten = "8080"\n', "[console] listen must be HOST:PORT"),
        ('[console]\nlisten = "h:99999"\n', "[console] listen must be HOST:PORT"),
        ("[console]\nidle_timeout_s = 1\n", "[console] idle_timeout_s must be a number"),
        ('[console]\nstale_after_s = "2"\n', "[console] stale_after_s must be a number"),
        ("[console]\nundo_s = 31\n", "[console] undo_s must be a number of seconds from 0 to 30"),
        ("[console]\nundo_s = -1\n", "[console] undo_s must be a number"),
        ('[console]\ncertificate = "c.crt"\n', "[console] certificate and key go together"),
        (
            '[console]\ncertificate = "c.crt"\nkey = "c.key"\n',
            "[console] certificate",
        ),
        ("[broker]\nport = 0\n", "[broker] port must be 1-65535"),
        ('[broker]\nprotocol = "4"\n', "[broker] protocol must be one of 3.1.1, 5"),
        ('[broker]\ntopic_prefix = "a/b"\n', "[broker] topic_prefix must be one topic level"),
        ('[broker]\ntls_ca = "missing.crt"\n', "[broker] tls_ca"),
        ("[broker]\nuser = 'alice'\n", "unknown keys in [broker]: user"),
        ("broker = 3\n", "[broker] must be a table"),
        ("[wall]\npassword_file = 'w'\n", "[wall] account must be a broker account name"),
        ("[wall]\naccount = 'a/b'\npassword_file = 'w'\n", "[wall] account must be"),
        ("[wall]\naccount = 'wall'\n", "[wall] password_file is missing"),
        ("[wall]\naccount = 'wall'\npassword_file = 'missing'\n", "[wall] password_file"),
        ("[wall]\naccount = 'wall'\npassword = 'x'\n", "unknown keys in [wall]: password"),
        ("[console]\npause_amber_s = 0\n", "[console] pause_amber_s must be a number"),
        (
            "[console]\npause_amber_s = 90\npause_red_s = 60\n",
            "[console] pause_red_s (60) must be more than pause_amber_s (90)",
        ),
        ("[console]\npause_red_s = 60\n", "pause_red_s (60) must be more than pause_amber_s (60)"),
        ('[console]\nlanguage = "fr"\n', "[console] language must be one of en, es, not 'fr'"),
        ("[console\n", "is not valid TOML"),
    ],
)
def test_each_mistake_names_the_file_and_the_key(tmp_path: Path, text: str, words: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigurationError) as raised:
        load_console_config(path)
    message = str(raised.value)
    assert str(path) in message and words in message, message
    assert "\n" not in message


def test_livetable_console_says_it_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "[console]\nidle_timeout_s = -5\n")
    done = subprocess.run(
        [sys.executable, "-m", "controller.tools.cli", "console", "--config", str(path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done
    assert done.stderr.splitlines() == [
        f"livetable: error: {path}: [console] idle_timeout_s must be a number of seconds "
        "from 10 to 86400, not -5"
    ]
    missing = subprocess.run(
        [sys.executable, "-m", "controller.tools.cli", "console", "--config", str(tmp_path / "no")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert missing.returncode == 1
    assert missing.stderr.splitlines() == [
        f"livetable: error: config file {tmp_path / 'no'} does not exist"
    ]


# -- the broker's section: named and keyed as a table's [mqtt], the old [broker] still read ------

OLD_FILE = (
    '[console]\nlisten = "127.0.0.1:8080"\n'
    '[broker]\nhost = "broker.studio"\nport = 8883\nprotocol = "3.1.1"\n'
    'topic_prefix = "studio"\ntls_ca = "ca.crt"\n'
)
NEW_FILE = (
    '[console]\nlisten = "127.0.0.1:8080"\n'
    '[mqtt]\nhost = "broker.studio"\nport = 8883\nprotocol = "3.1.1"\n'
    'topic_prefix = "studio"\n[mqtt.tls]\nca_file = "ca.crt"\n'
)


def test_the_old_and_the_new_names_load_alike(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("x")
    old = load_console_config(write(tmp_path, OLD_FILE))
    new = load_console_config(write(tmp_path, NEW_FILE))
    assert old == new
    broker = new.broker
    assert (broker.host, broker.port, broker.protocol, broker.topic_prefix) == (
        "broker.studio",
        8883,
        "3.1.1",
        "studio",
    )
    assert broker.tls_ca == tmp_path / "ca.crt"
    cluster = load_console_config(write(tmp_path, '[mqtt]\nhosts = ["n1:1883", "n2:1884"]\n'))
    assert cluster.broker.hosts == (("n1", 1883), ("n2", 1884))


def test_a_tables_mqtt_lines_load_in_the_console_as_they_are(tmp_path: Path) -> None:
    """The broker's lines of a table's file (those a console has: no account, it signs each
    person in) mean the same in the console's file."""
    from controller.service.config import load_config

    (tmp_path / "ca.crt").write_text("x")
    shared = (
        '[mqtt]\nhost = "broker.studio"\nport = 8883\nprotocol = "3.1.1"\n'
        'topic_prefix = "studio"\n[mqtt.tls]\nca_file = "ca.crt"\n'
    )
    table_file = tmp_path / "t1.toml"
    table_file.write_text(
        '[table]\nid = "t1"\ngame = "baccarat"\njournal_path = "t1.journal"\n' + shared
    )
    table = load_config(table_file).mqtt
    assert table is not None and table.tls is not None
    console = load_console_config(write(tmp_path, shared)).broker
    assert (console.host, console.port, console.protocol, console.topic_prefix) == (
        table.host,
        table.port,
        table.protocol,
        table.topic_prefix,
    )
    assert console.tls_ca == table.tls.ca_file


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[mqtt]\nport = 0\n", "[mqtt] port must be 1-65535"),
        ('[mqtt]\nprotocol = "4"\n', "[mqtt] protocol must be one of 3.1.1, 5"),
        ('[mqtt]\ntopic_prefix = "a/b"\n', "[mqtt] topic_prefix must be one topic level"),
        ('[mqtt]\nhosts = ["n1:1883"]\nhost = "n1"\n', "[mqtt] give hosts or host and port"),
        ('[mqtt]\nhosts = ["n1"]\n', "[mqtt] hosts: a broker is host:port"),
        ('[mqtt.tls]\nca_file = "missing.crt"\n', "[mqtt.tls] ca_file"),
        ("[mqtt.tls]\n", "[mqtt.tls] needs ca_file"),
        ("[mqtt]\ntls = 1\n", "[mqtt.tls] must be a table"),
        ('[mqtt.tls]\nca_file = "c"\ncert_file = "c"\n', "unknown keys in [mqtt.tls]: cert_file"),
        # The old section's CA key is not the new one's, and the other way round.
        ('[mqtt]\ntls_ca = "ca.crt"\n', "unknown keys in [mqtt]: tls_ca"),
        ('[broker.tls]\nca_file = "ca.crt"\n', "unknown keys in [broker]: tls"),
        ("[mqtt]\nusername = 'alice'\n", "unknown keys in [mqtt]: username"),
        ("[mqtt]\n[broker]\n", "[broker] is the old name of [mqtt]: give one of them"),
        ("mqtt = 3\n", "[mqtt] must be a table"),
    ],
)
def test_each_mistake_in_the_new_names_names_the_file_and_the_key(
    tmp_path: Path, text: str, words: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigurationError) as raised:
        load_console_config(path)
    message = str(raised.value)
    assert str(path) in message and words in message, message
    assert "\n" not in message


def test_the_wall_account_reads_its_password_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "wall.password").write_text("s3cret\n")
    config = load_console_config(
        write(tmp_path, '[wall]\naccount = "livetable-console"\npassword_file = "wall.password"\n')
    )
    assert config.wall is not None
    assert (config.wall.account, config.wall.password_file) == (
        "livetable-console",
        tmp_path / "wall.password",
    )
    assert "s3cret" not in repr(config), "the password stays in its file"
    assert load_console_config(write(tmp_path, "")).wall is None


def test_a_pause_ages_amber_then_red_and_the_pages_may_speak_one_language(
    tmp_path: Path,
) -> None:
    config = load_console_config(write(tmp_path, ""))
    # The defaults: amber at a minute, red at two (the shipped Prometheus alert's 2 minutes).
    assert (config.pause_amber_s, config.pause_red_s, config.language) == (60, 120, None)
    text = '[console]\npause_amber_s = 30\npause_red_s = 90\nlanguage = "es"\n'
    config = load_console_config(write(tmp_path, text))
    assert (config.pause_amber_s, config.pause_red_s, config.language) == (30, 90, "es")


def test_the_default_red_is_the_shipped_alerts_time() -> None:
    alerts = (REPO_ROOT / "systemd" / "prometheus" / "livetable-alerts.yml").read_text()
    rule = alerts[alerts.index("alert: LivetableTablePaused") :]
    minutes = int(rule.split("for:", 1)[1].split()[0].rstrip("m"))
    assert ConsoleConfig().pause_red_s == minutes * 60
