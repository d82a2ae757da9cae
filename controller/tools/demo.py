"""``livetable demo``: the table daemon with simulated devices and people around it.

The demo runs what a studio runs: ``livetable run``'s daemon (one per table: in this process
for one table or with ``--camera``, else one ``livetable run`` process each), each reading a
shoe simulator that speaks the real protocol on a real pseudo-terminal, journaling every
event and speaking the MQTT API to a broker. Around it, everyone talks to the table only
over MQTT, as people would (``simulators/mqtt_bots.py``): a dealer draws the card the table
asks for (now and then one out of turn: ``--mistake-rate``), the shoe misreads some cards
(``--misread-rate``) and the serial line is noisy if asked (``--line-noise``), so the table
pauses; a supervisor resolves each pause after a moment (``--resolve-delay-s``), entering
by hand a card neither the shoe nor the camera could read (the dealer saw it on the felt);
a platform opens rounds and answers decisions.

What you see is what an MQTT subscriber sees: on a terminal, a live view of every table
(phase, shoe, hands and totals, the decision awaited and its countdown, the result of each
bet, pauses and how they were resolved, the last events); otherwise one line per event;
with ``--json`` every message of the tables' topics (availability, state, events in ``seq``
order, the dealer's line) as one JSON object per line (``topic``, ``payload``). The view is
the API client's :class:`~controller.client.api_client.StudioClient`: one account's connection to
every table.

With ``--console`` the supervisors' web console (``livetable console``) runs beside it, on a
free loopback port against the demo's broker; with ``--supervisor manual`` the simulated
supervisor stands aside and a person resolves the pauses there. Ctrl-C and SIGTERM stop the
tables (and the console) and remove the temporary work folder.

Without ``--broker`` an MQTT broker (amqtt) runs inside the demo on a free loopback port
with one account, printed so that another client can watch, e.g.
``mosquitto_sub -h 127.0.0.1 -p PORT -u demo -P PASSWORD -i demo -t 'livetable/#' -v``.

Every client of the demo (daemons, people, view, console) speaks one MQTT version:
``--mqtt`` (or ``?mqtt=`` in the ``--broker`` URL), MQTT 5 against a ``--broker`` unless
told, 3.1.1 against the embedded broker (amqtt speaks nothing else). nats-server speaks
3.1.1 only and refuses MQTT 5 in its CONNACK; the broker check says so in one line ("refused
MQTT 5: try --mqtt 3.1.1").

With ``--camera`` the table has a camera too: the dealer lays every round card on the camera
simulator's felt and the table's camera reader reads the cards the shoe misreads. Without
``--deck`` a deck of ``--design`` is enrolled once from 1,040 pictures the simulated camera
takes (as ``livetable camera enrol`` does) and cached under ``$LIVETABLE_CACHE_DIR/decks``
(default ``~/.cache/livetable/decks``).

examples:
  livetable demo
  livetable demo --game blackjack-classic --rounds 10 --tables 2
  livetable demo --json --rounds 3 --broker mqtt://127.0.0.1:1883
  livetable demo --tables 2 --mqtt 3.1.1 --broker mqtt://127.0.0.1:1883
  livetable demo --console --supervisor manual
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from controller.kernel.errors import ConfigurationError
from controller.mqtt.connection import broker_text
from controller.table.config import GAME_IDS

logger = logging.getLogger(__name__)

# The demo's deck is enrolled as a studio enrols its own (`livetable camera enrol`): pictures
# of every card laid in a slot, taken by the table camera (here the camera simulator), 20 of
# each card: 5 in each of four camera set-ups and slots, none of them a set-up the demo then
# plays with. Enrolled from rendered scenes instead (docs/vision.md's synthetic pictures),
# its calibration met a misread at 0.926 and the deck abstained on 37-46 % of blackjack reads
# on the felt; enrolled from the felt, 11-26 % (docs/camera.md).
DEMO_DECK_LAYOUT = "blackjack-classic"
DEMO_DECK_SETUPS = (
    (100, "box1.hand1.card1"),
    (101, "box3.hand1.card1"),
    (102, "dealer.card1"),
    (103, "box2.hand1.card1"),
)
DEMO_DECK_PICTURES_PER_SETUP = 5
# Rates of trouble, so that pauses happen and the supervisor has something to do.
DEFAULT_MISREAD_RATE = 0.05
DEFAULT_CAMERA_MISREAD_RATE = 0.1  # with a camera: it reads most of them
DEFAULT_MISTAKE_RATE = 0.1
# A person at the console takes a moment to resolve a pause: long enough to be seen.
DEFAULT_RESOLVE_DELAY_S = 1.5
# How long a demo table, told to stop, waits for the round in play ([table] stop_timeout_s).
DEMO_STOP_TIMEOUT_S = 1.0
# How long the demo waits for the last messages and for its daemons to stop.
SETTLE_S = 5.0
# A table whose daemon has not said "online" this long after it started cannot reach the
# broker (its daemon logs why, at once): the demo stops instead of waiting for its timeout.
ONLINE_WITHIN_S = 30.0
# The live view's redraws per second (the decision countdown moves in tenths).
REFRESH_PER_S = 8
# A studio's worth of tables (each its own livetable run process); the live view shows at
# most MAX_SHOWN, so more are followed one line per event, as with --plain.
MAX_TABLES = 50
MAX_SHOWN = 8
DEFAULT_TIMEOUT_S = 600.0
# How long the console the demo starts has to answer on its port.
CONSOLE_START_S = 30.0
TOPIC_PREFIX = "livetable"


def cache_dir() -> Path:
    """``$LIVETABLE_CACHE_DIR``, else ``~/.cache/livetable`` (as the card artwork's cache)."""
    configured = os.environ.get("LIVETABLE_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "livetable"


def demo_deck_path(design: str, model_digest: str) -> Path:
    """Where the demo caches its enrolled deck of ``design`` for the model ``model_digest``.

    The name carries the deck file's format and the locator's and face comparison's
    revisions: a deck cached by an older livetable still loads, but would read without what
    the newer enrolment adds (the corner thumbnails, the corners an older locator missed, a
    face level calibrated with the face compared as it now is)."""
    from vision.deck import FORMAT_VERSION
    from vision.face import FACE_REVISION
    from vision.locate import LOCATOR_REVISION

    pictures = 52 * DEMO_DECK_PICTURES_PER_SETUP * len(DEMO_DECK_SETUPS)
    revisions = f"v{FORMAT_VERSION}-l{LOCATOR_REVISION}-f{FACE_REVISION}"
    name = f"{design}-felt{pictures}-{revisions}-{model_digest[:16]}.npz"
    return cache_dir() / "decks" / name


def demo_deck(design: str, out: TextIO) -> Path:
    """The enrolled deck of ``design`` for the demo: from the cache, or enrolled now (about
    a minute) from 1,040 pictures the camera simulator takes of the cards laid in a slot, with
    the collector of ``livetable camera enrol``, and cached. The file name carries the
    model's digest: a retrained model enrols again rather than load a deck it refuses."""
    from controller.kernel.cards import ALL_FACES, Card
    from drivers.camera_enrol import collect_pictures
    from simulators.camera import SimulatedCamera
    from vision.enrol import enrol, labelled_images, read_image
    from vision.model import DEFAULT_MODEL, CornerClassifier

    classifier = CornerClassifier(DEFAULT_MODEL)
    path = demo_deck_path(design, classifier.digest)
    if path.exists():
        print(f"livetable demo: using the enrolled {design} deck cached in {path}", file=out)
        return path
    pictures = 52 * DEMO_DECK_PICTURES_PER_SETUP * len(DEMO_DECK_SETUPS)
    print(
        f"livetable demo: enrolling a {design} deck from {pictures:,} pictures taken by the "
        f"simulated table camera (once: it is cached in {path}) ...",
        file=out,
        flush=True,
    )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="livetable-demo-deck-") as folder:
        for number, (seed, slot) in enumerate(DEMO_DECK_SETUPS, start=1):
            camera = SimulatedCamera(DEMO_DECK_LAYOUT, design, seed=seed)

            def lay(
                card: Card, _k: int, _n: int, camera: SimulatedCamera = camera, slot: str = slot
            ) -> None:
                camera.clear()
                camera.deal(slot, card)

            # The collector counts the pictures already in the folder: each set-up adds five.
            target = number * DEMO_DECK_PICTURES_PER_SETUP
            collect_pictures(camera, slot, ALL_FACES, target, lay, Path(folder), timeout_s=10.0)
        examples = ((item.card, read_image(item.path)) for item in labelled_images(Path(folder)))
        deck = enrol(classifier, examples, name=f"{design} (livetable demo)")
    deck.save(path)  # all or nothing: a stopped demo leaves no half-written cache
    print(
        f"livetable demo: enrolled in {time.monotonic() - started:.0f} s "
        f"(threshold {deck.threshold:.3f})",
        file=out,
        flush=True,
    )
    return path


# -- the broker ---------------------------------------------------------------------------


MQTT_VERSIONS = ("3.1.1", "5")
# With --broker and no --mqtt: MQTT 5, whose PUBACK reason codes let the broker check tell a
# refused publish at once and which mosquitto (the shipped broker) speaks. A broker that
# speaks only 3.1.1 (nats-server) refuses it in its CONNACK and the demo says to try 3.1.1.
DEFAULT_BROKER_MQTT = "5"
# The embedded broker (amqtt) speaks MQTT 3.1.1 only.
EMBEDDED_BROKER_MQTT = "3.1.1"
# Debian's bundle of the system's CAs (ca-certificates), where Python's default may be absent.
SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


@dataclasses.dataclass
class BrokerAddress:
    """Where the demo's clients and daemons connect, and as whom."""

    host: str
    port: int
    login: tuple[str, str] | None = None
    # The MQTT version every client of the demo speaks (the daemons' [mqtt] protocol).
    mqtt_protocol: str = DEFAULT_BROKER_MQTT
    # Whether the URL named it (?mqtt=...): then --mqtt may not say otherwise.
    protocol_named: bool = False
    # A cluster's nodes, host:port first, that the daemons and the people move on to when
    # their node fails ([mqtt] hosts); empty: host:port alone.
    hosts: tuple[tuple[str, int], ...] = ()
    # TLS (mqtts://), trusting tls_ca or, when None, the system's CAs.
    tls: bool = False
    tls_ca: str | None = None

    @property
    def url(self) -> str:
        """The broker as a person reads it: ``mqtt://host:port`` or ``mqtts://host:port``."""
        return f"{'mqtts' if self.tls else 'mqtt'}://{broker_text(self.host, self.port)}"

    @property
    def client_tls(self) -> dict[str, Any]:
        """The TLS arguments of every client the demo starts (the API client's)."""
        return {"tls": self.tls, "tls_ca": self.tls_ca}

    def daemon_ca_file(self) -> str | None:
        """The CA file a table's or the console's ``[mqtt.tls] ca_file`` names (their TOML
        takes a file, not "the system's store"): --tls-ca, else the system's bundle."""
        if not self.tls:
            return None
        if self.tls_ca is not None:
            return str(Path(self.tls_ca).resolve())
        import ssl

        for candidate in (ssl.get_default_verify_paths().cafile, SYSTEM_CA_BUNDLE):
            if candidate and Path(candidate).is_file():
                return candidate
        raise ConfigurationError(
            f"--broker {self.url}: no system CA bundle found for the tables: give --tls-ca"
        )

    @property
    def paho_protocol(self) -> int:
        import paho.mqtt.client as mqtt

        return mqtt.MQTTv5 if self.mqtt_protocol == "5" else mqtt.MQTTv311

    def watch_command(self) -> str:
        # -i: a studio broker refuses a client without an id (and takes the account's name
        # as its id); mosquitto_sub sends none unless told.
        login = f" -u {self.login[0]} -P {self.login[1]} -i {self.login[0]}" if self.login else ""
        client_id = "" if self.login else " -i livetable-watch"
        tls = ""
        if self.tls:
            tls = f" --cafile {self.tls_ca}" if self.tls_ca else " --capath /etc/ssl/certs"
        return (
            f"mosquitto_sub -h {self.host} -p {self.port}{tls}{login}{client_id} "
            f"-t '{TOPIC_PREFIX}/#' -v"
        )


def parse_broker_url(text: str, tls_ca: str | None = None) -> BrokerAddress:
    """``--broker`` as the one parser of :mod:`controller.mqtt.broker_name` reads it: a host,
    host:port, ``mqtt[s]://[user:password@]host[:port][?mqtt=3.1.1|5]`` or a list of nodes;
    ``tls_ca`` (--tls-ca) makes a bare name TLS, trusting that CA."""
    from controller.mqtt.broker_name import parse_broker_name

    try:
        name = parse_broker_name(text, tls=tls_ca is not None)
    except ValueError as error:
        raise ConfigurationError(f"--broker: {error}") from None
    login = None if name.login is None else (name.login[0], name.login[1] or "")
    return BrokerAddress(
        name.host,
        name.port,
        login,
        name.protocol or DEFAULT_BROKER_MQTT,
        name.protocol is not None,
        name.hosts,
        name.tls,
        tls_ca,
    )


def broker_argument(text: str) -> str:
    """``--broker``'s type: a bad name is an argument error (usage, exit 2). The name is read
    again with --tls-ca once every option is known (:func:`parse_broker_url`)."""
    try:
        parse_broker_url(text)
    except ConfigurationError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--broker").lstrip(": ")) from None
    return text


def table_count(text: str) -> int:
    """``--tables``' type: 1 to :data:`MAX_TABLES`."""
    from controller.kernel.cli_support import positive_int

    value = positive_int(text)
    if value > MAX_TABLES:
        raise argparse.ArgumentTypeError(f"{value} is more than the demo's {MAX_TABLES} tables")
    return value


# -- what a broker given with --broker must let the demo do ------------------------------------

# How long the broker check waits for each answer (a CONNACK, a PUBACK, a message back): a
# broker answers in milliseconds; this only bounds one that says nothing at all.
CHECK_ANSWER_S = 10.0
# The account name under which the check writes a response topic nobody reads.
CHECK_ACCOUNT = "livetable-demo-check"
# A CONNACK's "unsupported protocol version" (MQTT 5's reason code 0x84; paho maps MQTT 3.1.1's
# return code 1 onto it): nats-server answers an MQTT 5 CONNECT so.
UNSUPPORTED_PROTOCOL_VERSION = 0x84


class _BrokerProbe:
    """One connection of the broker check in the demo's MQTT version (the API client's
    :func:`start_client`), noting its CONNACK, PUBACKs, SUBACK, messages and whether the
    broker dropped it. It does not reconnect: a drop is an answer."""

    def __init__(self, broker: BrokerAddress, suffix: str) -> None:
        from controller.client.api_client import start_client

        self.lock = threading.Condition()
        self.connack: Any = None
        self.dropped: Any = None
        self.suback: list[Any] | None = None
        self.pubacks: dict[int, Any] = {}
        self.received: list[str] = []
        self.client = start_client(
            broker.host,
            broker.port,
            f"{CHECK_ACCOUNT}-{os.getpid()}-{suffix}",
            on_connect=self._note("connack"),
            on_message=lambda _c, _u, message: self._add(self.received, message.topic),
            on_disconnect=self._on_disconnect,
            on_subscribe=lambda _c, _u, _mid, reasons, _p: self._set("suback", list(reasons)),
            on_publish=lambda _c, _u, mid, reason, _p: self._put(mid, reason),
            protocol=broker.paho_protocol,
            login=broker.login,
            reconnect_delay_s=(600, 600),
            **broker.client_tls,
        )

    def _note(self, name: str) -> Callable[..., None]:
        return lambda _c, _u, _f, reason, _p: self._set(name, reason)

    def _on_disconnect(self, _c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        self._set("dropped", reason)

    def _set(self, name: str, value: Any) -> None:
        with self.lock:
            setattr(self, name, value)
            self.lock.notify_all()

    def _add(self, into: list[str], topic: str) -> None:
        with self.lock:
            into.append(topic)
            self.lock.notify_all()

    def _put(self, mid: int, reason: Any) -> None:
        with self.lock:
            self.pubacks[mid] = reason
            self.lock.notify_all()

    def wait(self, condition: Callable[[], bool]) -> bool:
        with self.lock:
            return self.lock.wait_for(condition, CHECK_ANSWER_S)

    def publish(self, topic: str) -> Any:
        """Publish at QoS 1 and wait: the PUBACK's reason, or None if the connection
        dropped (or nothing came)."""
        info = self.client.publish(topic, json.dumps({"transaction": CHECK_ACCOUNT}), qos=1)
        self.wait(lambda: info.mid in self.pubacks or self.dropped is not None)
        return self.pubacks.get(info.mid)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@contextlib.contextmanager
def _said_by_the_api_client() -> Any:
    """The API client's connection problems, kept (not logged) while the broker check runs:
    the check says the first in one line itself."""
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    api_logger = logging.getLogger("controller.client.api_client")
    handler, propagate = Keep(logging.WARNING), api_logger.propagate
    api_logger.addHandler(handler)
    api_logger.propagate = False
    try:
        yield said
    finally:
        api_logger.removeHandler(handler)
        api_logger.propagate = propagate


def check_broker(broker: BrokerAddress, ids: list[str], viewer: str) -> None:
    """That the broker lets the demo's one account do what the demo does, else a
    :class:`ConfigurationError` in one line naming what it refused: the connection (its
    credentials, or the MQTT version: "refused MQTT 5: try --mqtt 3.1.1"); a publish to a
    table's topics or of a request under the platform's, the supervisor's or the viewer's
    role (its ACL: told by MQTT 5's PUBACK; under MQTT 3.1.1 a broker acknowledges a publish
    it drops, so each is read back by a second connection, within :data:`CHECK_ANSWER_S`);
    a second connection of the same account (a broker that takes the account's name as the
    client id drops the first); a message on a table's topic passed back to the account (its
    ACL for reading)."""

    from controller.client.api_client import PROBE_TABLE

    url = broker.url
    user = broker.login[0] if broker.login is not None else None
    who = f"account {user}" if user is not None else "an anonymous client"
    needs = (
        "the demo's view, tables, platform and supervisor all use the one account of --broker: "
        "it needs a broker that lets one account read and write every table's topics, e.g. "
        "mosquitto without an ACL, or the demo's own broker (no --broker)"
    )
    with _said_by_the_api_client() as said, contextlib.ExitStack() as probes:
        first = _BrokerProbe(broker, "a")
        probes.callback(first.close)
        first.wait(lambda: first.connack is not None or bool(said))
        if first.connack is None:
            problem = said[0].split(f"{broker.host}:{broker.port} ", 1)[-1] if said else ""
            raise ConfigurationError(
                f"the broker at {url} {problem or f'did not answer in {CHECK_ANSWER_S:g} s'}"
            )
        if getattr(first.connack, "value", None) == UNSUPPORTED_PROTOCOL_VERSION:
            other = "3.1.1" if broker.mqtt_protocol == "5" else "5"
            raise ConfigurationError(
                f"the broker at {url} refused MQTT {broker.mqtt_protocol}: try --mqtt {other}"
            )
        if first.connack.is_failure:
            hint = (
                f"account {user}: a wrong password, or an account the broker does not know"
                if user is not None
                else "no account was given: --broker mqtt://user:password@host:port"
            )
            raise ConfigurationError(
                f"the broker at {url} refused the connection ({first.connack}): {hint}"
            )
        written = [f"{TOPIC_PREFIX}/{table_id}/response/{CHECK_ACCOUNT}" for table_id in ids]
        requests = [
            f"{TOPIC_PREFIX}/{PROBE_TABLE}/request/{role}/{name}/status"
            for role, name in (
                ("platform", "platform"),
                ("supervisor", "demo-supervisor"),
                ("viewer", viewer),
            )
        ]
        acknowledged = broker.mqtt_protocol == "5"
        for topic in written + requests if acknowledged else []:
            reason = first.publish(topic)
            if reason is None or reason.is_failure:
                what = "no answer" if reason is None else str(reason)
                raise ConfigurationError(
                    f"the broker at {url} refused {who} a publish to {topic} ({what}): {needs}"
                )
        second = _BrokerProbe(broker, "b")
        probes.callback(second.close)
        second.wait(lambda: second.connack is not None)
        first.publish(written[0])
        if first.dropped is not None:
            raise ConfigurationError(
                f"the broker at {url} allows one connection per account (a second connection "
                f"of {who} dropped the first: it takes the account's name as the client id): "
                f"{needs}"
            )
        # The tables read their requests under the same account: under MQTT 3.1.1 they are
        # read back too (a refused subscription is named; a refused read or publish is not).
        reads = [f"{TOPIC_PREFIX}/+/response/{CHECK_ACCOUNT}"] + (
            [] if acknowledged else [f"{TOPIC_PREFIX}/{PROBE_TABLE}/request/+/+/status"]
        )
        second.client.subscribe([(read, 1) for read in reads])
        second.wait(lambda: second.suback is not None)
        if second.suback is None or any(reason.is_failure for reason in second.suback):
            raise ConfigurationError(
                f"the broker at {url} refused {who} the subscription to {' and '.join(reads)} "
                f"({second.suback}): {needs}"
            )
        for topic in written[:1] if acknowledged else written + requests:
            first.publish(topic)
            if not second.wait(lambda topic=topic: topic in second.received):
                why = (
                    "its ACL does not let it read a table's topics"
                    if acknowledged
                    else "its ACL refuses the publish or the read: MQTT 3.1.1 does not say which"
                )
                raise ConfigurationError(
                    f"the broker at {url} does not pass {topic} back to {who} within "
                    f"{CHECK_ANSWER_S:g} s ({why}): {needs}"
                )


# -- one table ----------------------------------------------------------------------------


def write_table_config(
    folder: Path, table_id: str, args: argparse.Namespace, broker: BrokerAddress
) -> Path:
    """The table's TOML file in its folder, as a studio writes one for ``livetable run``."""
    from simulators.table_config import write_table_config as write

    username, password = broker.login if broker.login is not None else (None, None)
    return write(
        folder / f"{table_id}.toml",
        table_id=table_id,
        game=args.game,
        shoe_port=folder / "shoe",
        protocol=args.protocol,
        broker_host=broker.host,
        broker_port=broker.port,
        broker_hosts=broker.hosts or None,
        mqtt_protocol=broker.mqtt_protocol,
        betting_s=args.betting_s,
        decision_s=args.decision_s,
        dealer_idle_s=args.dealer_idle_s,
        # The demo stops its bots before its tables: a round in play would never finish.
        stop_timeout_s=DEMO_STOP_TIMEOUT_S,
        client_id=f"livetable-{table_id}-{os.getpid()}",
        topic_prefix=TOPIC_PREFIX,
        username=username,
        password=password,
        tls_ca_file=broker.daemon_ca_file(),
    )


class InProcessDaemon:
    """``livetable run``'s :class:`~controller.service.daemon.TableDaemon`, on a thread of this
    process (so that a simulated camera can stand in for the capture). The daemon is made
    on that thread: its journal (SQLite) belongs to the thread that opened it."""

    def __init__(self, config_path: Path, camera: Any = None, reader: Any = None) -> None:
        from controller.service.config import load_config

        config = load_config(config_path)
        if reader is not None:
            config = dataclasses.replace(config, vision=reader)
        self.config = config
        self.camera = camera
        self._stop = threading.Event()
        self._made = threading.Event()
        self.status: int | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, name=f"table-{config.table.table_id}", daemon=True
        )

    def _run(self) -> None:
        from controller.service.daemon import TableDaemon

        try:
            daemon = TableDaemon(self.config, camera_source=self.camera)
        except BaseException as error:
            self.error = error
            self.status = 1
            return
        finally:
            self._made.set()
        try:
            self.status = daemon.run(self._stop)
        except BaseException as error:  # reported by the demo, which then stops
            self.error = error
            self.status = 1

    def start(self) -> None:
        self._thread.start()
        self._made.wait()
        if self.error is not None:
            raise self.error

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(SETTLE_S * 2)

    def why(self) -> str:
        return repr(self.error) if self.error is not None else f"exit {self.status}"


class DemoTable:
    """One table: its shoe on a pty, its daemon, and the people around it over MQTT."""

    def __init__(
        self,
        index: int,
        table_id: str,
        args: argparse.Namespace,
        work: Path,
        broker: BrokerAddress,
        in_process: bool,
        deck: Path | None,
        stood_aside: Callable[[str, str], None] | None = None,
    ) -> None:
        from controller.client.api_client import Account, ApiClient
        from simulators.daemon_process import DaemonProcess
        from simulators.dealer import DealerSimulator
        from simulators.mqtt_bots import TableBots
        from simulators.shoe.simulator import FaultPlan, ShoeSimulator

        self.table_id = table_id
        self.folder = work / table_id
        self.folder.mkdir(parents=True)
        seed = args.seed + index
        self.shoe = ShoeSimulator(
            args.protocol,
            self.folder / "shoe",
            seed=seed,
            cut_card_depth=args.cut_card_depth,
            faults=FaultPlan(
                garbage_rate=args.line_noise,
                corrupt_rate=args.line_noise,
                duplicate_rate=args.line_noise,
            ),
            # What left the shoe, misread cards' faces included: the truth to check against.
            truth_path=self.folder / "shoe-truth.jsonl",
        )
        self.config_path = write_table_config(self.folder, table_id, args, broker)
        self.camera: Any = None
        reader = None
        if deck is not None:
            from drivers.camera_reader import ReaderConfig
            from simulators.camera import SimulatedCamera

            self.camera = SimulatedCamera(args.game, args.design, seed=seed, clock=time.time)
            reader = ReaderConfig(deck=deck, deadline_s=args.camera_deadline_s)
        self.daemon: InProcessDaemon | DaemonProcess = (
            InProcessDaemon(self.config_path, self.camera, reader)
            if in_process
            else DaemonProcess(self.config_path, self.folder / "daemon.log")
        )
        misread_rate = args.misread_rate
        if misread_rate is None:
            misread_rate = DEFAULT_CAMERA_MISREAD_RATE if deck is not None else DEFAULT_MISREAD_RATE
        self.dealer = DealerSimulator(
            self.shoe, pace_s=args.pace_s, felt=self.camera, misread_rate=misread_rate
        )
        self.clients: list[Any] = []

        def client(role: str, name: str) -> Any:
            made = ApiClient(
                broker.host,
                broker.port,
                table_id,
                Account(role, name),
                login=broker.login,
                protocol=broker.paho_protocol,
                hosts=broker.hosts or None,
                **broker.client_tls,
            )
            self.clients.append(made)
            return made

        self.bots = TableBots(
            client("platform", "platform"),
            client("supervisor", "demo-supervisor"),
            rounds=args.rounds,
            seed=seed,
            dealer=self.dealer,
            resolve_delay_s=args.resolve_delay_s,
            mistake_rate=args.mistake_rate,
            resolves_pauses=args.supervisor != "manual",
            on_stood_aside=None if stood_aside is None else partial(stood_aside, table_id),
        )

    def start(self) -> None:
        self.shoe.start()
        self.daemon.start()
        for made in self.clients:
            if not made.wait_connected():
                raise ConfigurationError(f"the broker refused the demo's clients: {made.refused}")
        self.bots.start()

    def stop(self) -> None:
        self.bots.stop()
        self.daemon.stop()
        for made in self.clients:
            made.close()
        self.shoe.stop()


# -- the console ----------------------------------------------------------------------------


class ConsoleProcess:
    """``livetable console`` as a child process on a free loopback port, against the demo's
    broker: its ``console.toml`` and its log in the work folder."""

    def __init__(self, work: Path, broker: BrokerAddress) -> None:
        from simulators.broker import free_port

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.config = work / "console.toml"
        self.log_path = work / "console.log"
        # The daemons' protocol: the embedded broker speaks 3.1.1 only.
        self.config.write_text(
            "# Written by livetable demo --console.\n"
            f'[console]\nlisten = "127.0.0.1:{self.port}"\n\n'
            f'[mqtt]\nhost = "{broker.host}"\nport = {broker.port}\n'
            f'protocol = "{broker.mqtt_protocol}"\ntopic_prefix = "{TOPIC_PREFIX}"\n'
            + (
                f'\n[mqtt.tls]\nca_file = "{broker.daemon_ca_file()}"\n'
                if broker.tls
                else ""
            ),
            encoding="utf-8",
        )
        self.process: Any = None

    def start(self) -> str:
        """Start it and wait until it answers; its address."""
        import subprocess
        import urllib.error
        import urllib.request

        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [
                    *[sys.executable, "-m", "controller.tools.cli"],
                    *["console", "--config", str(self.config)],
                    *["--listen", f"127.0.0.1:{self.port}"],
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + CONSOLE_START_S
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.url}healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return self.url
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        said = self.log_path.read_text(errors="replace").strip().splitlines()[-1:]
        raise ConfigurationError(
            "the console did not start"
            + (f": {said[0]}" if said else f" in {CONSOLE_START_S:g} s")
            + f" (its log: {self.log_path})"
        )

    def stop(self) -> None:
        import subprocess

        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# -- what is printed ------------------------------------------------------------------------


class Watcher:
    """The demo's own API client, one account's connection to every table (the API client's
    :class:`~controller.client.api_client.StudioClient`): feeds the view, prints lines or JSON.
    Connected before any table starts; a table it sees first has its events caught up from
    the start, so it sees every event, in ``seq`` order, once."""

    def __init__(
        self,
        broker: BrokerAddress,
        watch: Any,
        printer: Callable[[str], None] | None,
        as_json: bool,
    ) -> None:
        from controller.client.api_client import StudioClient

        self.watch = watch
        self.printer = printer
        self.as_json = as_json
        self.studio = StudioClient(
            broker.host,
            broker.port,
            watcher_account(broker),
            prefix=TOPIC_PREFIX,
            protocol=broker.paho_protocol,
            client_id=f"livetable-demo-view-{os.getpid()}",
            on_update=self._on_update,
            **broker.client_tls,
        )

    def wait_connected(self, timeout: float) -> bool:
        return self.studio.wait_connected(timeout)

    def _on_update(self, update: Any) -> None:
        line = self.watch.update(update)
        if self.printer is None or update.kind == "epoch":
            return
        if self.as_json:
            channel = "events" if update.kind == "event" else update.kind
            topic = f"{TOPIC_PREFIX}/{update.table_id}/{channel}"
            self.printer(json.dumps({"topic": topic, "payload": update.body}, sort_keys=True))
        elif line is not None:
            event = update.body
            self.printer(f"{update.table_id} #{event['seq']:<4} {event['type']:<18} {line}")
        elif update.kind == "availability":
            self.printer(f"{update.table_id} is {update.body}")

    def close(self) -> None:
        self.studio.close()


def watcher_account(broker: BrokerAddress) -> Any:
    """The account the demo's view speaks as: a viewer, under the broker's login."""
    from controller.client.api_client import Account

    if broker.login is None:
        return Account("viewer")
    return Account("viewer", broker.login[0], broker.login[1])


class Printer:
    """One write per line under a lock: the subscriber prints from its own thread."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self.lock:
            self.out.write(text + "\n")
            self.out.flush()


# -- the demo -------------------------------------------------------------------------------


def table_ids(tables: int) -> list[str]:
    """The demo's table ids: ``demo`` alone, ``demo1``... when there are several."""
    return ["demo"] if tables == 1 else [f"demo{n}" for n in range(1, tables + 1)]


def _check_work_dir(args: argparse.Namespace) -> None:
    """A work folder that already holds a table's journal is refused: its shoe was dealt
    by a simulator that is gone, and a fresh one would continue it with other cards."""
    if not args.work_dir:
        return
    for table_id in table_ids(args.tables):
        folder = Path(args.work_dir) / table_id
        if folder.exists():
            raise ConfigurationError(
                f"--work-dir {args.work_dir} already holds table {table_id} from an earlier "
                f"demo ({folder}); its journal's shoe cannot be continued by a new simulated "
                "shoe: give an empty or new folder, or remove that one"
            )


class Stopped(KeyboardInterrupt):
    """SIGTERM, taken as Ctrl-C is: the demo stops its tables and removes its work folder."""


@contextlib.contextmanager
def _sigterm_as_ctrl_c() -> Any:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set a handler (a demo run inside a test's thread)
        return

    def stop(_signum: int, _frame: Any) -> None:
        raise Stopped

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _DeliberateFault(logging.Filter):
    """The shoe protocol's warnings about what came down the line, lowered to debug: in the
    demo every misread, garbled or lost frame is one the simulated shoe made on purpose, and
    the table's events say each (a ``misread`` pause, ``cards_lost``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        return True


@contextlib.contextmanager
def deliberate_faults_logged_as_debug() -> Any:
    """While the demo runs, the shoe protocol's warnings of the in-process daemon are debug
    lines (``-vv`` shows them); a daemon process logs to its own file."""
    shoe_logger = logging.getLogger("drivers.shoe.sessions")
    lowered = _DeliberateFault()
    shoe_logger.addFilter(lowered)
    try:
        yield
    finally:
        shoe_logger.removeFilter(lowered)


def run_demo(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    with _sigterm_as_ctrl_c(), deliberate_faults_logged_as_debug():
        return _run_demo(args, out)


def _run_demo(args: argparse.Namespace, out: TextIO) -> int:
    _check_work_dir(args)
    live = not args.json and not args.plain and out.isatty()
    if live and args.tables > MAX_SHOWN:
        print(
            f"livetable demo: {args.tables} tables are more than the live view shows "
            f"({MAX_SHOWN}): one line per event instead",
            file=out,
        )
        live = False
    # With --json, stdout is JSON lines only: everything said to a person goes to stderr.
    say = Printer(sys.stderr if args.json else out)
    deck = None
    if args.camera:
        deck = _camera_deck(args, sys.stderr if args.json else out)
    ids = table_ids(args.tables)
    with contextlib.ExitStack() as running:
        if args.broker:
            broker = parse_broker_url(args.broker, args.tls_ca)
            if args.mqtt is not None:
                if broker.protocol_named and broker.mqtt_protocol != args.mqtt:
                    raise ConfigurationError(
                        f"--mqtt {args.mqtt} and the --broker URL's mqtt={broker.mqtt_protocol} "
                        "disagree: give one"
                    )
                broker = dataclasses.replace(broker, mqtt_protocol=args.mqtt)
        else:
            if args.mqtt not in (None, EMBEDDED_BROKER_MQTT):
                raise ConfigurationError(
                    f"the embedded broker (amqtt) speaks MQTT {EMBEDDED_BROKER_MQTT} only: "
                    f"--mqtt {args.mqtt} needs a --broker that speaks it"
                )
            from simulators.embedded_broker import EmbeddedBroker

            # With the console, every person signs in under a name of their own.
            embedded = running.enter_context(EmbeddedBroker(any_account=args.console))
            broker = BrokerAddress(
                embedded.host,
                embedded.port,
                (embedded.username, embedded.password),
                EMBEDDED_BROKER_MQTT,
            )
        where = "embedded broker (amqtt)" if not args.broker else "broker"
        say(
            f"livetable demo: {where} at {broker.url}; watch it with: "
            f"{broker.watch_command()}"
        )
        if args.broker:
            check_broker(broker, ids, watcher_account(broker).name)
        if args.work_dir:
            work = Path(args.work_dir)
            work.mkdir(parents=True, exist_ok=True)
        else:
            work = Path(
                running.enter_context(tempfile.TemporaryDirectory(prefix="livetable-demo-"))
            )
        from controller.tools.demo_view import DemoWatch, summary_line

        watch = DemoWatch(TOPIC_PREFIX, ids)
        lines = Printer(out) if args.json else say
        watcher = Watcher(broker, watch, None if live else lines, args.json)
        running.callback(watcher.close)
        if not watcher.wait_connected(CHECK_ANSWER_S):
            refused = watcher.studio.refused
            raise ConfigurationError(
                f"the broker at {broker.url} "
                + (f"refused the demo's view: {refused}" if refused else "did not answer")
            )
        console_url = ""
        if args.console:
            console = ConsoleProcess(work, broker)
            running.callback(console.stop)
            console_url = console.start()
            how = (
                "sign in under any name, e.g. supervisor floor, with any password (the demo's "
                "broker takes every account)"
                if not args.broker
                else "sign in with an account of that broker"
            )
            say(f"livetable demo: the supervisors' console at {console_url} : {how}")

        def stood_aside(table_id: str, said: str) -> None:
            watch.note(table_id, said)
            if not live:
                say(f"{table_id} {said}")

        in_process = args.tables == 1 or args.camera
        tables = [
            DemoTable(index, table_id, args, work, broker, in_process, deck, stood_aside)
            for index, table_id in enumerate(ids)
        ]
        if not args.json:
            how = "in this process" if in_process else "one `livetable run` process each"
            say(
                f"livetable demo: {len(tables)} {args.game} table(s) ({how}), {args.rounds} "
                f"round(s) each, shoe protocol {args.protocol}, work folder {work}"
            )
        started = time.monotonic()
        for table in tables:
            running.callback(table.stop)
            table.start()
        header = (
            f"livetable demo · {args.game} · broker {broker.url} · "
            f"Ctrl-C stops\n"
            + (f"console: {console_url}" if console_url else f"watch: {broker.watch_command()}")
        )
        finished = _play(args, tables, watch, header, out, live, work)
        elapsed = time.monotonic() - started
        unreached = [] if finished else _never_online(tables, watch)
        failed = [t for t in tables if not t.daemon.alive()]
        _settle(tables, watch)
    # Every table is stopped now (availability offline), the broker too.
    if not args.json:
        for table in tables:
            with watch.lock:
                line = summary_line(
                    watch.tables[table.table_id], table.dealer.cards_drawn, args.camera
                )
            say(f"livetable demo: {line}")
        say(f"livetable demo: {elapsed:.1f} s")
    for table in failed:
        print(
            f"livetable demo: table {table.table_id} stopped: {table.daemon.why()}", file=sys.stderr
        )
    for table in unreached:
        logged = table.daemon.log() if hasattr(table.daemon, "log") else ""
        said = [line for line in logged.splitlines() if " ERROR " in line][-1:]
        print(
            f"livetable demo: table {table.table_id} never came online in {ONLINE_WITHIN_S:g} s: "
            "its daemon cannot reach the broker"
            + (f" ({said[0].split(': ', 1)[-1]})" if said else " (its error is logged above)"),
            file=sys.stderr,
        )
    for table in tables:
        for error in table.bots.errors[:5]:
            print(f"livetable demo: table {table.table_id}: {error}", file=sys.stderr)
    return 0 if finished and not failed and not unreached else 1


def verbosity(args: argparse.Namespace) -> int:
    from controller.kernel.cli_support import verbosity as counted

    return counted(args)


def _play(
    args: argparse.Namespace,
    tables: list[DemoTable],
    watch: Any,
    header: str,
    out: TextIO,
    live: bool,
    work: Path,
) -> bool:
    """Until every table has played its rounds (True), a daemon stops or time runs out."""
    timeout_s = args.timeout_s
    if timeout_s is None:
        # A person resolves the pauses: the demo waits for them as long as it takes.
        timeout_s = float("inf") if args.supervisor == "manual" else DEFAULT_TIMEOUT_S
    deadline = time.monotonic() + timeout_s
    online_by = time.monotonic() + ONLINE_WITHIN_S

    def playing() -> bool:
        return (
            not all(t.bots.done for t in tables)
            and all(t.daemon.alive() for t in tables)
            and time.monotonic() < deadline
            and not (time.monotonic() > online_by and _never_online(tables, watch))
        )

    try:
        if not live:
            while playing():
                time.sleep(0.05)
        else:
            _live(playing, watch, header, out, work, verbosity(args))
    except KeyboardInterrupt:
        return False
    return all(t.bots.done for t in tables)


def _never_online(tables: list[DemoTable], watch: Any) -> list[DemoTable]:
    with watch.lock:
        return [t for t in tables if watch.tables[t.table_id].availability is None]


def _live(
    playing: Callable[[], bool], watch: Any, header: str, out: TextIO, work: Path, verbose: int
) -> None:
    from rich.console import Console
    from rich.live import Live

    from controller.kernel.logs import configure_logging
    from controller.tools.demo_view import render

    # Log lines would tear the view: while it is up they go to a file in the work folder.
    log = open(work / "demo.log", "a", encoding="utf-8")  # noqa: SIM115 - closed below
    configure_logging(verbose, stream=log)
    try:
        console = Console(file=out)
        with Live(
            console=console,
            refresh_per_second=REFRESH_PER_S,
            get_renderable=lambda: render(watch, header),
            redirect_stderr=False,
        ):
            while playing():
                time.sleep(0.1)
            time.sleep(2 / REFRESH_PER_S)  # the last frame shows the last result
    finally:
        configure_logging(verbose)
        log.close()


def _settle(tables: list[DemoTable], watch: Any) -> None:
    """Let the last state after the last event arrive, then stop every table."""
    deadline = time.monotonic() + SETTLE_S

    def caught_up() -> bool:
        with watch.lock:
            return all(
                (seen := watch.tables[t.table_id]).state is not None
                and seen.state.get("seq") == seen.last_seq
                for t in tables
            )

    while not caught_up() and time.monotonic() < deadline:
        time.sleep(0.02)
    for table in tables:
        table.bots.stop()
    for table in tables:
        table.daemon.stop()
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline and any(
        watch.tables[t.table_id].availability != "offline" for t in tables
    ):
        time.sleep(0.02)


def _camera_deck(args: argparse.Namespace, out: TextIO) -> Path:
    try:
        import cv2  # noqa: F401
    except ImportError as error:
        raise ConfigurationError(
            "--camera needs OpenCV: pip install 'livetable[vision]'"
        ) from error
    deck = Path(args.deck) if args.deck else demo_deck(args.design, out)
    print(
        f"livetable demo: camera simulator over the {args.game} layout, {args.design} cards, "
        f"deck {deck}",
        file=out,
        flush=True,
    )
    return deck


DESCRIPTION = """\
Run simulated tables around the real table daemon (the code of livetable run), with
simulated devices and people, all over MQTT.

Each table's daemon reads a shoe simulator that speaks the real protocol on a real
pseudo-terminal, journals every event and speaks the MQTT API. A dealer draws the card the
table asks for (now and then one out of turn: --mistake-rate), the shoe misreads some cards
(--misread-rate), the serial line is noisy if asked (--line-noise), so the table pauses; a
supervisor resolves each pause after a moment (--resolve-delay-s), entering by hand a card
nobody could read; a platform opens rounds and answers decisions. They all talk to the
table only over MQTT.

On a terminal you see a live view of every table; otherwise one line per event; with
--json every message of the tables' topics as one JSON object per line (topic and
payload).

With --console the supervisors' web console runs on a free loopback port against the
demo's broker (its address is printed; sign in under any name); with --supervisor manual
no bot resolves a pause: a person does, at the console, and the demo waits for them.

Without --broker an MQTT broker (amqtt) runs inside the demo on a free loopback port, with
an account printed with a mosquitto_sub line so that another client can watch. Every
client speaks --mqtt's MQTT version (MQTT 5 against a --broker unless told; 3.1.1 for a
broker such as nats-server that speaks nothing else). With
--tables N each table is its own livetable run process (in this process with --camera).
With --camera the dealer lays the cards on a simulated felt and the camera reads the cards
the shoe misreads; without --deck a deck of --design is enrolled once and cached under
$LIVETABLE_CACHE_DIR/decks (default ~/.cache/livetable/decks)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from controller.kernel.cli_support import (
        HelpFormatter,
        add_json,
        examples,
        non_negative_int,
        non_negative_seconds,
        positive_int,
        positive_seconds,
        rate_0_1,
    )
    from drivers.shoe.registry import protocol_names

    parser = subparsers.add_parser(
        "demo",
        help="run simulated tables: the daemon, a shoe on a pty, dealer, platform and "
        "supervisor over MQTT, and a live view",
        description=DESCRIPTION,
        epilog=examples(
            "livetable demo",
            "livetable demo --game blackjack-classic --rounds 10 --tables 2",
            "livetable demo --json --rounds 3 --broker mqtt://127.0.0.1:1883",
            "livetable demo --tables 2 --mqtt 3.1.1 --broker mqtt://127.0.0.1:1883",
            "livetable demo --console --supervisor manual",
        ),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--game", choices=GAME_IDS, default="baccarat")
    parser.add_argument(
        "--rounds", type=positive_int, default=5, help="rounds to play at each table (default 5)"
    )
    parser.add_argument(
        "--tables",
        type=table_count,
        default=1,
        help=f"tables, each its own daemon and shoe, shown one above another (default 1, at "
        f"most {MAX_TABLES}; more than {MAX_SHOWN} are shown one line per event, as --plain)",
    )
    parser.add_argument(
        "--broker",
        metavar="BROKER",
        type=broker_argument,
        help="use this broker: host, host:port, mqtt://[user:password@]host[:port]"
        "[?mqtt=3.1.1], mqtts://... for TLS, or a cluster's nodes separated by commas "
        "(default: start one inside the demo on a free loopback port)",
    )
    parser.add_argument(
        "--tls-ca",
        metavar="FILE",
        help="speak TLS to the --broker, trusting this CA file (default with mqtts://: the "
        "system's CAs)",
    )
    parser.add_argument(
        "--mqtt",
        choices=MQTT_VERSIONS,
        default=None,
        help=f"the MQTT version the demo's tables, people and view speak (default "
        f"{DEFAULT_BROKER_MQTT} with --broker, which mosquitto speaks; {EMBEDDED_BROKER_MQTT} "
        "for the embedded broker, and for nats-server, which speaks nothing else)",
    )
    parser.add_argument(
        "--protocol", choices=protocol_names(), default="angel-eye", help="shoe protocol"
    )
    parser.add_argument(
        "--seed", type=non_negative_int, default=1, help="shuffle and decisions (default 1)"
    )
    parser.add_argument(
        "--pace-s",
        type=non_negative_seconds,
        default=0.2,
        help="the dealer's pause before each card (default 0.2)",
    )
    parser.add_argument(
        "--betting-s", type=positive_seconds, default=1.0, help="betting window (default 1)"
    )
    parser.add_argument(
        "--decision-s", type=positive_seconds, default=3.0, help="decision deadline (default 3)"
    )
    parser.add_argument(
        "--dealer-idle-s",
        type=positive_seconds,
        default=5.0,
        help="a card expected for longer than this pauses the table (a card lost on a noisy "
        "line is only noticed this way; default 5)",
    )
    parser.add_argument(
        "--cut-card-depth",
        type=non_negative_int,
        default=14,
        help="cards behind the cut card (default 14)",
    )
    parser.add_argument(
        "--misread-rate",
        type=rate_0_1,
        default=None,
        help=f"share of round cards the shoe misreads (default {DEFAULT_MISREAD_RATE}; "
        f"{DEFAULT_CAMERA_MISREAD_RATE} with --camera)",
    )
    parser.add_argument(
        "--mistake-rate",
        type=rate_0_1,
        default=DEFAULT_MISTAKE_RATE,
        help="share of rounds in which the dealer draws a card out of turn while bets are "
        f"taken (default {DEFAULT_MISTAKE_RATE})",
    )
    parser.add_argument(
        "--line-noise",
        type=rate_0_1,
        default=0.0,
        help="rate of garbage, corrupted and duplicated frames on the serial line (default 0)",
    )
    parser.add_argument(
        "--resolve-delay-s",
        type=non_negative_seconds,
        default=DEFAULT_RESOLVE_DELAY_S,
        help=f"how long the supervisor takes to resolve a pause (default "
        f"{DEFAULT_RESOLVE_DELAY_S})",
    )
    parser.add_argument(
        "--camera",
        action="store_true",
        help="add a simulated camera: the dealer lays the cards on its felt and the camera "
        "reads the cards the shoe misreads",
    )
    parser.add_argument(
        "--deck",
        help="enrolled deck for the camera (default: enrol one of --design once and cache it)",
    )
    parser.add_argument(
        "--design", default="kde-standard", help="card design on the felt (default kde-standard)"
    )
    parser.add_argument(
        "--camera-deadline-s",
        type=positive_seconds,
        default=2.0,
        help="how long the camera may look for a card before abstaining (default 2)",
    )
    parser.add_argument(
        "--work-dir",
        metavar="DIR",
        help="keep the tables' configuration, journals, shoe truth and logs here (default: a "
        "temporary folder, removed at the end)",
    )
    parser.add_argument(
        "--timeout-s",
        type=positive_seconds,
        default=None,
        help=f"give up after this (default {DEFAULT_TIMEOUT_S:g}; none with --supervisor manual)",
    )
    parser.add_argument(
        "--console",
        action="store_true",
        help="serve the supervisors' web console (livetable console) on a free loopback port "
        "against the demo's broker, and print its address",
    )
    parser.add_argument(
        "--supervisor",
        choices=("bot", "manual"),
        default="bot",
        help="bot: the simulated supervisor resolves every pause (default); manual: it stands "
        "aside and a person resolves them (at the console: --console)",
    )
    add_json(parser)
    parser.add_argument(
        "--plain",
        action="store_true",
        help="one line per event even on a terminal (no live view)",
    )
    parser.set_defaults(func=run_demo)
