"""The console's configuration, ``console.toml``, validated at start.

```toml
[console]
listen = "127.0.0.1:8080"      # HOST:PORT; --listen overrides
idle_timeout_s = 900           # a session ends after this long without a request
stale_after_s = 120            # an online table silent this long in a round is stale
undo_s = 3                     # a one-key action waits this long, to be undone (0: none)
pause_amber_s = 60             # a pause this old turns amber on the wall,
pause_red_s = 120              # and this old red (the shipped alert fires at 2 minutes)
language = "es"                # the pages' words: "en" or "es"; unset: each browser's
certificate = "/etc/livetable/console.crt"   # both, or neither: HTTPS
key = "/etc/livetable/console.key"
[mqtt]                         # named and keyed as a table's [mqtt]
host = "127.0.0.1"
port = 1883
# or a cluster's nodes instead of host and port (the next tried when one fails or drops):
# hosts = ["n1.studio:1883", "n2.studio:1883", "n3.studio:1883"]
protocol = "5"                 # or "3.1.1" (a NATS cluster speaks only 3.1.1)
topic_prefix = "livetable"
[mqtt.tls]                     # optional: TLS to the broker, trusting this CA
ca_file = "/etc/livetable/ca.pem"

[wall]                         # optional: the wall stays live after an idle sign-out
account = "livetable-console"  # a viewer account of the broker, the console's own
password_file = "/run/credentials/livetable-console.service/wall.password"
```

The console's first files named that section ``[broker]``, with the CA as ``tls_ca``; such a
file still loads unchanged (:data:`OLD_BROKER_SECTION`).

Read with :func:`~controller.kernel.config_file.read_toml` as a table's configuration is: every
error is one :class:`~controller.kernel.errors.ConfigurationError` naming the file and the key
(``console.toml: [console] idle_timeout_s must be a number of seconds from 10 to 86400``).
No password is in this file: every person signs in with their own broker account. The one
account of the console's own, ``[wall]``'s viewer, reads its password from a file (a systemd
credential), once, at start.
Relative paths are taken relative to the file.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from controller.kernel.config_file import check_keys, invalid, read_toml
from controller.kernel.errors import ConfigurationError
from controller.mqtt.connection import MQTT_PROTOCOLS, parse_hosts, topic_level_ok

DEFAULT_LISTEN: Final = "127.0.0.1:8080"
DEFAULT_IDLE_TIMEOUT_S: Final = 900.0
DEFAULT_STALE_AFTER_S: Final = 120.0
# A session shorter than this would end while a person reads a pause; longer than a day
# is a session nobody ends.
IDLE_TIMEOUT_RANGE_S: Final = (10.0, 86400.0)
STALE_AFTER_RANGE_S: Final = (1.0, 86400.0)
# A one-key action (accept, burn, no cards drawn, resume from the pause queue) waits this
# long before it is sent, so a key pressed by mistake can be undone: long enough to see
# the words and press Esc, short enough not to hold a table that waits.
DEFAULT_UNDO_S: Final = 3.0
UNDO_RANGE_S: Final = (0.0, 30.0)
# A pause ages on the wall: amber after this long, red after that (the shipped Prometheus
# alert LivetableTablePaused fires at 2 minutes: red says so on the wall first).
DEFAULT_PAUSE_AMBER_S: Final = 60.0
DEFAULT_PAUSE_RED_S: Final = 120.0
PAUSE_AGE_RANGE_S: Final = (1.0, 86400.0)
# The languages the pages' catalogues speak (controller/console/static/i18n/<code>.json).
LANGUAGES: Final = ("en", "es")

_CONSOLE_KEYS: Final = frozenset(
    {
        "listen",
        "idle_timeout_s",
        "stale_after_s",
        "undo_s",
        "pause_amber_s",
        "pause_red_s",
        "language",
        "certificate",
        "key",
    }
)
_MQTT_KEYS: Final = frozenset({"host", "port", "hosts", "protocol", "topic_prefix", "tls"})
# The console takes no client certificate: each person's account and password sign in.
_MQTT_TLS_KEYS: Final = frozenset({"ca_file"})
# The section's first name, still read: the same keys but tls_ca for [mqtt.tls] ca_file.
OLD_BROKER_SECTION: Final = "broker"
_OLD_BROKER_KEYS: Final = frozenset(_MQTT_KEYS - {"tls"} | {"tls_ca"})
_WALL_KEYS: Final = frozenset({"account", "password_file"})


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    """Where the console reaches the broker (each person's own account signs in)."""

    host: str = "127.0.0.1"
    port: int = 1883
    protocol: str = "5"
    topic_prefix: str = "livetable"
    tls_ca: Path | None = None
    hosts: tuple[tuple[str, int], ...] = ()
    """A cluster's nodes (``host`` and ``port`` are the first); empty: ``host:port`` alone."""


@dataclass(frozen=True, slots=True)
class WallAccount:
    """The console's own viewer account: it keeps a page's wall live, read-only, once its
    person's session has ended (idle), so a wall nobody touched keeps watching."""

    account: str
    password_file: Path


@dataclass(frozen=True, slots=True)
class ConsoleConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    stale_after_s: float = DEFAULT_STALE_AFTER_S
    undo_s: float = DEFAULT_UNDO_S
    pause_amber_s: float = DEFAULT_PAUSE_AMBER_S
    pause_red_s: float = DEFAULT_PAUSE_RED_S
    language: str | None = None
    """The pages' language for every browser; None: each browser's own."""
    certificate: Path | None = None
    key: Path | None = None
    broker: BrokerSettings = BrokerSettings()
    wall: WallAccount | None = None
    source: Path | None = None

    @property
    def tls(self) -> bool:
        return self.certificate is not None

    @property
    def origin(self) -> str:
        """The console's own origin, as a browser sends it in ``Origin``."""
        scheme = "https" if self.tls else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"


_LISTEN_WANTED: Final = "HOST:PORT (e.g. 127.0.0.1:8080)"


def parse_listen(text: object, key: str = "[console] listen") -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6) as (host, port); ConfigurationError naming
    ``key`` otherwise."""
    if not isinstance(text, str) or ":" not in text:
        raise invalid(key, _LISTEN_WANTED, text)
    host, _, port_text = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host or not port_text.isdigit() or not (0 < int(port_text) < 65536):
        raise invalid(key, _LISTEN_WANTED, text)
    return host, int(port_text)


def _seconds(
    section: dict[str, Any], key: str, default: float, bounds: tuple[float, float]
) -> float:
    value = section.get(key, default)
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise invalid(
            key, f"a number of seconds from {low:g} to {high:g}", value, section="console"
        )
    return float(value)


def _path(section: str, key: str, value: object, base_dir: Path | None, check: bool) -> Path:
    if not isinstance(value, str) or not value:
        raise invalid(key, "a non-empty path", value, section=section)
    path = Path(value)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    if check and not path.is_file():
        raise ConfigurationError(f"[{section}] {key} {path} does not exist")
    return path


def _table(document: dict[str, Any], name: str, keys: frozenset[str]) -> dict[str, Any]:
    section = document.get(name, {})
    if not isinstance(section, dict):
        raise ConfigurationError(f"[{name}] must be a table")
    check_keys(section, keys, name)
    return section


def broker_from_mapping(
    section: dict[str, Any],
    base_dir: Path | None = None,
    check_files: bool = True,
    name: str = "mqtt",
) -> BrokerSettings:
    """The broker's settings from ``[mqtt]`` (``name`` "broker": the old ``[broker]``, whose
    CA is ``tls_ca``); ConfigurationError naming the section and key."""
    host = section.get("host", "127.0.0.1")
    if not isinstance(host, str) or not host:
        raise invalid("host", "a non-empty string", host, section=name)
    port = section.get("port", 1883)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise invalid("port", "1-65535", port, section=name)
    protocol = str(section.get("protocol", "5"))
    if protocol not in MQTT_PROTOCOLS:
        raise invalid("protocol", f"one of {', '.join(MQTT_PROTOCOLS)}", protocol, section=name)
    prefix = section.get("topic_prefix", "livetable")
    if not isinstance(prefix, str) or not topic_level_ok(prefix):
        raise invalid(
            "topic_prefix",
            "one topic level without / + # (e.g. livetable)",
            prefix,
            section=name,
        )
    tls_ca = None
    if "tls_ca" in section:
        tls_ca = _path(name, "tls_ca", section["tls_ca"], base_dir, check_files)
    if "tls" in section:
        tls = section["tls"]
        if not isinstance(tls, dict):
            raise ConfigurationError(f"[{name}.tls] must be a table")
        check_keys(tls, _MQTT_TLS_KEYS, f"{name}.tls")
        if "ca_file" not in tls:
            raise ConfigurationError(f"[{name}.tls] needs ca_file")
        tls_ca = _path(f"{name}.tls", "ca_file", tls["ca_file"], base_dir, check_files)
    hosts: tuple[tuple[str, int], ...] = ()
    if "hosts" in section:
        if "host" in section or "port" in section:
            raise ConfigurationError(f"[{name}] give hosts or host and port, not both")
        hosts = parse_hosts(section["hosts"], f"[{name}]")
        host, port = hosts[0]
    return BrokerSettings(
        host=host, port=port, protocol=protocol, topic_prefix=prefix, tls_ca=tls_ca, hosts=hosts
    )


def config_from_mapping(
    document: dict[str, Any], base_dir: Path | None = None, check_files: bool = True
) -> ConsoleConfig:
    """The console's settings from a parsed document; ConfigurationError names the key."""
    unknown = sorted(set(document) - {"console", "mqtt", OLD_BROKER_SECTION, "wall"})
    if unknown:
        raise ConfigurationError(f"unknown sections: {', '.join(f'[{n}]' for n in unknown)}")
    if "mqtt" in document and OLD_BROKER_SECTION in document:
        raise ConfigurationError(
            f"[{OLD_BROKER_SECTION}] is the old name of [mqtt]: give one of them, not both"
        )
    console = _table(document, "console", _CONSOLE_KEYS)
    if OLD_BROKER_SECTION in document:
        broker_name = OLD_BROKER_SECTION
        broker = _table(document, OLD_BROKER_SECTION, _OLD_BROKER_KEYS)
    else:
        broker_name = "mqtt"
        broker = _table(document, "mqtt", _MQTT_KEYS)
    wall = (
        _wall(_table(document, "wall", _WALL_KEYS), base_dir, check_files)
        if ("wall" in document)
        else None
    )
    host, port = parse_listen(console.get("listen", DEFAULT_LISTEN))
    amber = _seconds(console, "pause_amber_s", DEFAULT_PAUSE_AMBER_S, PAUSE_AGE_RANGE_S)
    red = _seconds(console, "pause_red_s", DEFAULT_PAUSE_RED_S, PAUSE_AGE_RANGE_S)
    if red <= amber:
        raise ConfigurationError(
            f"[console] pause_red_s ({red:g}) must be more than pause_amber_s ({amber:g})"
        )
    language = console.get("language")
    if language is not None and language not in LANGUAGES:
        raise invalid("language", f"one of {', '.join(LANGUAGES)}", language, section="console")
    if ("certificate" in console) != ("key" in console):
        raise ConfigurationError("[console] certificate and key go together")
    certificate = key = None
    if "certificate" in console:
        certificate = _path("console", "certificate", console["certificate"], base_dir, check_files)
        key = _path("console", "key", console["key"], base_dir, check_files)
    return ConsoleConfig(
        host=host,
        port=port,
        idle_timeout_s=_seconds(
            console, "idle_timeout_s", DEFAULT_IDLE_TIMEOUT_S, IDLE_TIMEOUT_RANGE_S
        ),
        stale_after_s=_seconds(
            console, "stale_after_s", DEFAULT_STALE_AFTER_S, STALE_AFTER_RANGE_S
        ),
        undo_s=_seconds(console, "undo_s", DEFAULT_UNDO_S, UNDO_RANGE_S),
        pause_amber_s=amber,
        pause_red_s=red,
        language=language,
        certificate=certificate,
        key=key,
        broker=broker_from_mapping(broker, base_dir, check_files, broker_name),
        wall=wall,
    )


def _wall(section: dict[str, Any], base_dir: Path | None, check_files: bool) -> WallAccount:
    account = section.get("account")
    if not isinstance(account, str) or not account or not topic_level_ok(account):
        raise invalid(
            "account",
            "a broker account name without / + # (e.g. livetable-console)",
            account,
            section="wall",
        )
    if "password_file" not in section:
        raise ConfigurationError("[wall] password_file is missing: the account's password")
    password_file = _path("wall", "password_file", section["password_file"], base_dir, check_files)
    return WallAccount(account, password_file)


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """The file's name in front of a section's error, as the table's configuration does."""
    try:
        yield
    except ConfigurationError as error:
        raise ConfigurationError(f"{path}: {error}") from error


def load_console_config(
    path: Path, *, listen: str | None = None, check_files: bool = True
) -> ConsoleConfig:
    """Read and validate ``console.toml``; ``listen`` (``HOST:PORT``, from ``--listen``)
    replaces ``[console] listen``. Every error names the file and the key."""
    path = Path(path)
    document = read_toml(path)
    with _naming(path):
        config = config_from_mapping(document, path.parent, check_files)
    if listen is not None:
        host, port = parse_listen(listen, "--listen")
        config = dataclasses.replace(config, host=host, port=port)
    return dataclasses.replace(config, source=path)
