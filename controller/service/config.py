"""A table's whole configuration, from one TOML file, validated at start.

```toml
[table]        # the table, its game and its journal (controller/table/config.py)
signing_key = "/etc/livetable/t1.key"   # optional: sign the journal's head (see below)
[shoe]         # where the card shoe is and how it talks (drivers/shoe/driver.py ShoeConfig)
[camera]       # optional: the camera over the table (drivers/camera CameraConfig)
[vision]       # with [camera]: its enrolled deck and how it reads (drivers/camera_reader.py)
[mqtt]         # optional for the demo, required by `livetable run`
host = "localhost"
port = 1883                      # 8883 is usual with [mqtt.tls]
# or, for a cluster's nodes (instead of host and port): tried in turn, the next one when a
# connection fails or drops, with the same client id and persistent session
# hosts = ["n1.studio:1883", "n2.studio:1883", "n3.studio:1883"]
client_id = "livetable-t1"       # default: livetable-<table id>
username = "livetable-t1"
password_file = "/etc/livetable/t1.mqtt-password"   # or password = "..."
protocol = "5"                   # "3.1.1" or "5"
keepalive_s = 30
topic_prefix = "livetable"
max_packet_bytes = 65536         # the broker's max_packet_size (MQTT 5 brokers also say it)
[mqtt.tls]
ca_file = "/etc/livetable/ca.pem"
cert_file = "/etc/livetable/t1.pem"   # client certificate, optional
key_file = "/etc/livetable/t1.key"
[metrics]      # optional: `livetable run` serves /metrics for Prometheus (off without it)
listen = "127.0.0.1:9464"        # host:port, [v6 address]:port for IPv6
[evidence]     # optional: with [camera], the pictures of every card (service/pictures.py)
pictures = true                  # false: take none
keep_days = 90                   # prune pictures older than this
keep_bytes = 53687091200         # and the oldest beyond this many bytes
# directory = "/var/lib/livetable/t1.pictures"   # default: <journal>.pictures
```

:func:`load_config` reads every section; :func:`load_camera_config` reads only a ``[camera]``
table (``livetable camera calibrate`` and ``enrol`` also take a camera-only file). Both read
the file with :func:`~controller.kernel.config_file.read_toml` and map errors the same way: every
error is one :class:`~controller.kernel.errors.ConfigurationError` that names the file and the bad
key (``t1.toml: unknown keys in [mqtt]: colour``). A password is never part of an error
message, a log line or ``repr``. Relative paths are taken relative to the TOML file.

``[table] signing_key`` names the table's Ed25519 private key (``livetable journal keygen``):
the daemon then signs its journal's head (:mod:`controller.service.signing`). It is read here,
not with the rest of ``[table]``: it is no part of what binds a journal (a key may be rotated
under a living journal), and the daemon loads the key itself at start.
"""

from __future__ import annotations

import contextlib
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from controller.kernel.config_file import check_keys, invalid, read_toml
from controller.kernel.config_file import section as toml_section
from controller.kernel.errors import ConfigurationError
from controller.mqtt.connection import MQTT_PROTOCOLS, parse_hosts, topic_level_ok
from controller.table.config import TableConfig, table_config_from_mapping

if TYPE_CHECKING:
    from drivers.camera import CameraConfig
    from drivers.shoe.driver import ShoeConfig

# The shipped broker's max_packet_size (systemd/mosquitto/livetable.conf).
DEFAULT_MAX_PACKET_BYTES: Final = 65536
# Below this not even a state fits; MQTT's own ceiling is 256 MiB.
MIN_MAX_PACKET_BYTES: Final = 4096
MQTT_MAX_PACKET_BYTES: Final = 268_435_455


@dataclass(frozen=True, slots=True)
class TlsConfig:
    ca_file: Path
    cert_file: Path | None = None
    key_file: Path | None = None


@dataclass(frozen=True, slots=True)
class MqttConfig:
    """How the daemon reaches the broker. ``password`` never appears in ``repr``."""

    host: str = "localhost"
    port: int = 1883
    client_id: str = ""
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    password_file: Path | None = None
    """Where ``password`` was read from, if it came from a file."""
    protocol: str = "5"
    keepalive_s: int = 30
    topic_prefix: str = "livetable"
    tls: TlsConfig | None = None
    max_packet_bytes: int = DEFAULT_MAX_PACKET_BYTES
    """The largest packet the broker takes: nothing larger is published (an MQTT 5 broker's
    CONNACK may lower it; a bridged broker's link may need it lower than the local one)."""
    hosts: tuple[tuple[str, int], ...] = ()
    """A cluster's nodes, in the order they are tried (``host`` and ``port`` are the first);
    empty: ``host:port`` alone."""

    @property
    def brokers(self) -> tuple[tuple[str, int], ...]:
        """Every broker the daemon may connect to, the first one first."""
        return self.hosts or ((self.host, self.port),)

    def __post_init__(self) -> None:
        if not isinstance(self.host, str) or not self.host:
            raise invalid("host", "a non-empty string", self.host, section="mqtt")
        if (
            isinstance(self.port, bool)
            or not isinstance(self.port, int)
            or not (0 < self.port < 65536)
        ):
            raise invalid("port", "1-65535", self.port, section="mqtt")
        if self.protocol not in MQTT_PROTOCOLS:
            raise invalid(
                "protocol", f"one of {', '.join(MQTT_PROTOCOLS)}", self.protocol, section="mqtt"
            )
        if (
            isinstance(self.keepalive_s, bool)
            or not isinstance(self.keepalive_s, int)
            or not (5 <= self.keepalive_s <= 3600)
        ):
            raise invalid(
                "keepalive_s",
                "a whole number of seconds from 5 to 3600",
                self.keepalive_s,
                section="mqtt",
            )
        if (
            isinstance(self.max_packet_bytes, bool)
            or not isinstance(self.max_packet_bytes, int)
            or not (MIN_MAX_PACKET_BYTES <= self.max_packet_bytes <= MQTT_MAX_PACKET_BYTES)
        ):
            raise invalid(
                "max_packet_bytes",
                f"a whole number of bytes from {MIN_MAX_PACKET_BYTES} to {MQTT_MAX_PACKET_BYTES}",
                self.max_packet_bytes,
                section="mqtt",
            )
        prefix = self.topic_prefix
        if not isinstance(prefix, str) or not topic_level_ok(prefix):
            raise invalid(
                "topic_prefix",
                "one topic level without / + # (e.g. livetable)",
                prefix,
                section="mqtt",
            )


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """Where ``livetable run`` serves ``/metrics`` (:mod:`controller.service.metrics`)."""

    host: str
    port: int

    @property
    def listen(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


_METRICS_KEYS: Final = ("listen",)


def metrics_config_from_mapping(section: dict[str, Any]) -> MetricsConfig:
    """Build :class:`MetricsConfig` from the ``[metrics]`` table: ``listen`` is
    ``host:port`` (``[v6 address]:port``), port 1-65535."""
    check_keys(section, _METRICS_KEYS, "metrics")
    if "listen" not in section:
        raise ConfigurationError('[metrics] needs listen (e.g. listen = "127.0.0.1:9464")')
    listen = section["listen"]
    wanted = 'host:port with a port 1-65535 (e.g. "127.0.0.1:9464", "[::1]:9464")'
    if not isinstance(listen, str):
        raise invalid("listen", wanted, listen, section="metrics")
    host, colon, port = listen.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    host = host[1:-1] if bracketed else host
    if (
        not colon
        or not host
        or (":" in host) != bracketed
        or not set(host) <= _HOST_CHARACTERS
        or not (port.isascii() and port.isdigit())
        or not 0 < int(port) < 65536
    ):
        raise invalid("listen", wanted, listen, section="metrics")
    return MetricsConfig(host, int(port))


# A listening address is a name or an IP address: letters, digits, . - and IPv6's colons.
_HOST_CHARACTERS: Final = frozenset(string.ascii_letters + string.digits + ".-:")


@dataclass(frozen=True, slots=True)
class EvidenceConfig:
    """``[evidence]``: whether a table with a camera keeps pictures, and for how long."""

    pictures: bool = True
    keep_days: float = 90.0
    keep_bytes: int = 50 << 30
    directory: Path | None = None
    """Where the pictures go; default ``<journal>.pictures`` beside the journal."""


# A quarter's pictures, within 50 GiB (a baccarat table dealing day and night keeps about
# 240 MB a day: docs/performance.md, "A picture of every card").
DEFAULT_KEEP_DAYS: Final = 90.0
DEFAULT_KEEP_BYTES: Final = 50 << 30
_EVIDENCE_KEYS: Final = ("pictures", "keep_days", "keep_bytes", "directory")


def evidence_config_from_mapping(
    section: dict[str, Any], base_dir: Path | None = None
) -> EvidenceConfig:
    """Build :class:`EvidenceConfig` from the ``[evidence]`` table; ConfigurationError names
    the bad key."""
    if not isinstance(section, dict):
        raise ConfigurationError("[evidence] must be a table")
    check_keys(section, _EVIDENCE_KEYS, "evidence")
    pictures = section.get("pictures", True)
    if not isinstance(pictures, bool):
        raise invalid("pictures", "true or false", pictures, section="evidence")
    days = section.get("keep_days", DEFAULT_KEEP_DAYS)
    if isinstance(days, bool) or not isinstance(days, int | float) or not 0 < days <= 36_500:
        raise invalid("keep_days", "a number of days, 0 < days <= 36500", days, section="evidence")
    size = section.get("keep_bytes", DEFAULT_KEEP_BYTES)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1 << 20:
        raise invalid(
            "keep_bytes", "a whole number of bytes, at least 1048576", size, section="evidence"
        )
    directory = section.get("directory")
    if directory is not None:
        if not isinstance(directory, str) or not directory:
            raise invalid("directory", "a non-empty path", directory, section="evidence")
        path = Path(directory)
        directory = path if path.is_absolute() or base_dir is None else base_dir / path
    return EvidenceConfig(pictures, float(days), size, directory)


@dataclass(frozen=True, slots=True)
class LivetableConfig:
    """Every section of one table's configuration file."""

    table: TableConfig
    shoe: ShoeConfig | None = None
    camera: Any = None  # drivers.camera.CameraConfig, imported only when configured
    vision: Any = None  # drivers.camera_reader.ReaderConfig, with the camera
    mqtt: MqttConfig | None = None
    source: Path | None = None
    metrics: MetricsConfig | None = None
    evidence: EvidenceConfig = field(default_factory=EvidenceConfig)
    """``[evidence]``: the pictures a table with a camera keeps (controller/service/pictures.py)."""
    signing_key: Path | None = None
    """``[table] signing_key``: the private key the daemon signs its journal's head with."""

    def require(self, *sections: str) -> None:
        """ConfigurationError unless the named sections are present."""
        for name in sections:
            if getattr(self, name) is None:
                where = f"{self.source}" if self.source else "the configuration"
                raise ConfigurationError(f"{where} has no [{name}] section, which is needed here")


_MQTT_KEYS: Final = {
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
    "max_packet_bytes",
    "hosts",
}
_TLS_KEYS: Final = ("ca_file", "cert_file", "key_file")


def _path(value: object, key: str, base_dir: Path | None) -> Path:
    if not isinstance(value, str) or not value:
        raise invalid(key, "a non-empty path", value, section="mqtt")
    path = Path(value)
    return path if path.is_absolute() or base_dir is None else base_dir / path


def _read_secret(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(
            f"[mqtt] password_file {path} cannot be read: {error.strerror or error}"
        ) from error


def mqtt_config_from_mapping(
    section: dict[str, Any],
    table_id: str,
    base_dir: Path | None = None,
    check_files: bool = True,
) -> MqttConfig:
    """Build :class:`MqttConfig` from the ``[mqtt]`` table; reads the password file and
    checks that the TLS files exist, unless ``check_files`` is false."""
    check_keys(section, _MQTT_KEYS, "mqtt")
    values = {key: value for key, value in section.items() if key not in ("tls", "password_file")}
    for key in ("host", "client_id", "username", "password", "topic_prefix"):
        if key in values and not isinstance(values[key], str):
            # The value is not shown: it may be the password.
            raise invalid(key, "a string", section="mqtt")
    if "protocol" in values:
        values["protocol"] = str(values["protocol"])
    if "hosts" in section:
        if "host" in section or "port" in section:
            raise ConfigurationError("[mqtt] give hosts or host and port, not both")
        values["hosts"] = parse_hosts(section["hosts"], "[mqtt]")
        values["host"], values["port"] = values["hosts"][0]
    if "password" in section and "password_file" in section:
        raise ConfigurationError("[mqtt] give password or password_file, not both")
    if "password_file" in section:
        secret = _path(section["password_file"], "password_file", base_dir)
        values["password_file"] = secret
        if check_files:
            values["password"] = _read_secret(secret)
    if "tls" in section:
        tls = section["tls"]
        if not isinstance(tls, dict):
            raise ConfigurationError("[mqtt.tls] must be a table")
        check_keys(tls, _TLS_KEYS, "mqtt.tls")
        if "ca_file" not in tls:
            raise ConfigurationError("[mqtt.tls] needs ca_file")
        if ("cert_file" in tls) != ("key_file" in tls):
            raise ConfigurationError("[mqtt.tls] cert_file and key_file go together")
        values["tls"] = TlsConfig(
            ca_file=_path(tls["ca_file"], "tls.ca_file", base_dir),
            cert_file=_path(tls["cert_file"], "tls.cert_file", base_dir)
            if "cert_file" in tls
            else None,
            key_file=_path(tls["key_file"], "tls.key_file", base_dir)
            if "key_file" in tls
            else None,
        )
        for key in _TLS_KEYS:
            path = getattr(values["tls"], key)
            if check_files and path is not None and not path.is_file():
                raise ConfigurationError(f"[mqtt.tls] {key} {path} does not exist")
    values.setdefault("client_id", f"livetable-{table_id}")
    return MqttConfig(**values)


def config_from_mapping(
    document: dict[str, Any],
    base_dir: Path | None = None,
    environ: dict[str, str] | None = None,
    source: Path | None = None,
    check_files: bool = True,
) -> LivetableConfig:
    """Every section of a parsed document; ConfigurationError names the bad key.
    ``check_files``: see :func:`load_config`."""
    unknown = sorted(
        set(document) - {"table", "shoe", "camera", "vision", "mqtt", "metrics", "evidence"}
    )
    if unknown:
        raise ConfigurationError(f"unknown sections: {', '.join(f'[{n}]' for n in unknown)}")
    document, signing_key = _signing_key(document, base_dir)
    table = table_config_from_mapping(document, base_dir=base_dir, environ=environ)
    shoe = None
    if "shoe" in document:
        from drivers.shoe.driver import ShoeConfig

        shoe = ShoeConfig.from_mapping(document["shoe"])
    camera = None
    if "camera" in document:
        from drivers.camera import CameraConfig

        camera = CameraConfig.from_mapping(document["camera"])
    vision = None
    if "vision" in document and camera is None:
        raise ConfigurationError("[vision] needs a [camera] section to read from")
    if camera is not None:
        from drivers.camera_reader import ReaderConfig, require_deck

        # Read without a [vision] table too: LIVETABLE_VISION_DECK may name the deck.
        vision = ReaderConfig.from_mapping(
            document.get("vision", {}), base_dir=base_dir, environ=environ
        )
        require_deck(vision, check_file=check_files)
    mqtt = None
    if "mqtt" in document:
        if not isinstance(document["mqtt"], dict):
            raise ConfigurationError("[mqtt] must be a table")
        mqtt = mqtt_config_from_mapping(document["mqtt"], table.table_id, base_dir, check_files)
    metrics = None
    if "metrics" in document:
        if not isinstance(document["metrics"], dict):
            raise ConfigurationError("[metrics] must be a table")
        metrics = metrics_config_from_mapping(document["metrics"])
    evidence = evidence_config_from_mapping(document.get("evidence", {}), base_dir)
    if not topic_level_ok(table.table_id):
        raise ConfigurationError(
            f"[table] id {table.table_id!r} must be usable as one MQTT topic level (no / + #)"
        )
    return LivetableConfig(
        table=table,
        shoe=shoe,
        camera=camera,
        vision=vision,
        mqtt=mqtt,
        source=source,
        metrics=metrics,
        evidence=evidence,
        signing_key=signing_key,
    )


def _signing_key(
    document: dict[str, Any], base_dir: Path | None
) -> tuple[dict[str, Any], Path | None]:
    """The document without ``[table] signing_key``, and that key's path (relative to the
    file, as ``journal_path`` is), or None."""
    section = document.get("table")
    if not isinstance(section, dict) or "signing_key" not in section:
        return document, None
    value = section["signing_key"]
    if not isinstance(value, str) or not value:
        raise invalid("signing_key", "a non-empty path", value, section="table")
    path = Path(value)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    rest = {key: item for key, item in section.items() if key != "signing_key"}
    return {**document, "table": rest}, path


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """The one error mapping of a section's error: the file's name in front of it."""
    try:
        yield
    except ConfigurationError as error:
        raise ConfigurationError(f"{path}: {error}") from error


def load_config(
    path: Path, environ: dict[str, str] | None = None, *, check_files: bool = True
) -> LivetableConfig:
    """Read and validate a table's TOML file; every error names the file and the key.

    ``check_files=False`` checks everything the file says but reads nothing it points to:
    the password file is not read (``password`` stays ``None``) and the TLS files and the
    camera's enrolled deck need not exist, for checking a configuration away from the table
    PC it is written for. A ``[camera]`` must name its deck either way.
    """
    path = Path(path)
    document = read_toml(path)
    with _naming(path):
        return config_from_mapping(
            document, path.parent, environ, source=path, check_files=check_files
        )


def load_camera_config(path: Path, name: str = "camera") -> CameraConfig:
    """The camera table ``name`` (dotted for a nested one) of a TOML file: a table's whole
    configuration or a camera-only file. Errors are mapped as :func:`load_config` maps them."""
    from drivers.camera import CameraConfig

    path = Path(path)
    table = toml_section(read_toml(path), name, path)
    with _naming(path):
        return CameraConfig.from_mapping(table)
