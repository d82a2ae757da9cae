"""The shoe driver: a port, a reader thread, a protocol session, one sink for its events.

Thin on purpose: it opens the port with :func:`serial.serial_for_url` (a device path, a
``/dev/serial/by-id/...`` link, or ``socket://host:port`` for a serial-to-Ethernet server),
exclusively (an advisory ``flock``: a second program that asks the same, ``livetable shoe
monitor`` included, is refused with :class:`PortBusy`), feeds what it reads to the protocol
session and hands the session's events to the caller's sink (the table's
``TableRuntime.submit``, or a queue's ``put``). When the port vanishes (cable pulled) it
reports :class:`ShoeOffline` at once, watches for the device at a short fixed interval
(``reconnect_watch_s``) so that the port is open again as soon as the cable is back, and
reports :class:`ShoeOnline` when the shoe is back, possibly as a new tty behind the same
link. A port held by another program and a link that fails as soon as it opens are retried
with a doubling delay instead. ``serial.SerialException`` never leaves this module: it
becomes :class:`DeviceError` or a :class:`ShoeOffline` event.

A restarted table hands the driver its *resume point* (``resume_after``: the last shoe
sequence number in the table's journal), so that the session numbers on from it and the first
frame after the restart shows a gap across the downtime (see ``docs/shoe-protocol.md``).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import serial

from controller.kernel.config_file import invalid
from controller.kernel.errors import ConfigurationError, DeviceError
from drivers.shoe.events import ShoeEvent, ShoeOffline, ShoeOnline
from drivers.shoe.options import ProtocolOptions
from drivers.shoe.registry import ShoeProtocol, protocol_names
from drivers.shoe.registry import protocol as shoe_protocol
from drivers.shoe.sessions import HostCommand, ShoeResult, ShoeSession

logger = logging.getLogger(__name__)

EventSink = Callable[[ShoeEvent], None]
"""Where the driver's events go, called on its reader thread: ``TableRuntime.submit`` in the
table, ``queue.put`` in a tool or a test."""

RAW: Final = 5  # below DEBUG: every byte read and written

PARITIES: Final = {"N": serial.PARITY_NONE, "E": serial.PARITY_EVEN, "O": serial.PARITY_ODD}
STOP_BITS: Final = {
    1: serial.STOPBITS_ONE,
    1.5: serial.STOPBITS_ONE_POINT_FIVE,
    2: serial.STOPBITS_TWO,
}


DEFAULT_PROTOCOL: Final = "angel-eye"


@dataclass(frozen=True, slots=True)
class ShoeConfig:
    """Where the shoe is and how to talk to it. Validated when constructed."""

    port: str
    """A device path, a by-id link, or a pyserial URL such as ``socket://10.0.0.5:4001``."""
    protocol: str = DEFAULT_PROTOCOL
    """A name in :mod:`drivers.shoe.registry`."""
    baudrate: int | None = None
    """``None``: the protocol's default (its session's ``default_baudrate``: Angel Eye 4800,
    ASCII 9600, native 115200)."""
    bytesize: int = 8
    parity: str = "N"
    stopbits: float = 1
    read_timeout_s: float = 0.05
    """How long one read waits: bounds how late a command is sent and how long stop takes."""
    reconnect_initial_s: float = 0.1
    """The first wait before opening again a port that another program holds or that failed
    as soon as it opened; it doubles up to ``reconnect_max_s``."""
    reconnect_max_s: float = 5.0
    reconnect_watch_s: float = 0.1
    """How often a port that is not there (cable pulled, shoe not yet plugged) is looked for:
    a fixed interval, so the port is open again within this of the device coming back."""
    options: ProtocolOptions | None = None
    """The protocol's own settings (its ``[shoe.<protocol>]`` table, an instance of its
    ``options`` class); None: its defaults."""

    def __post_init__(self) -> None:
        parts = shoe_protocol(self.protocol)  # ConfigurationError naming the known protocols
        if self.options is None:
            object.__setattr__(self, "options", parts.options())
        elif type(self.options) is not parts.options:
            raise ConfigurationError(
                f"the {self.protocol} shoe protocol's settings are {parts.options.__name__}, "
                f"not {type(self.options).__name__}"
            )
        if not self.port:
            raise ConfigurationError("the shoe port must not be empty")
        if self.baudrate is not None and self.baudrate <= 0:
            raise ConfigurationError(f"baud rate must be positive, not {self.baudrate}")
        if self.bytesize not in (5, 6, 7, 8):
            raise ConfigurationError(f"byte size must be 5-8 bits, not {self.bytesize}")
        if self.parity not in PARITIES:
            raise ConfigurationError(f"parity must be one of N E O, not {self.parity!r}")
        if self.stopbits not in STOP_BITS:
            raise ConfigurationError(f"stop bits must be 1, 1.5 or 2, not {self.stopbits}")
        if not 0 < self.read_timeout_s <= 0.5:
            raise ConfigurationError("read timeout must be in (0, 0.5] s to report offline in 1 s")
        if not 0 < self.reconnect_initial_s <= self.reconnect_max_s:
            raise ConfigurationError("reconnect delays must satisfy 0 < initial <= max")
        if not 0 < self.reconnect_watch_s <= 0.4:
            # What the shoe sends before the port is open again is gone: the driver must be
            # reading within half a second of the cable coming back.
            raise ConfigurationError("reconnect_watch_s must be in (0, 0.4] s")

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> ShoeConfig:
        """Build from a TOML table (``[shoe]``, and ``[shoe.<protocol>]`` inside it, which
        the protocol parses itself); :class:`ConfigurationError` names the key."""
        if not isinstance(mapping, Mapping):
            raise ConfigurationError("[shoe] must be a table")
        if "port" not in mapping:
            raise ConfigurationError("[shoe] needs a port")
        expected: dict[str, tuple[type, ...]] = {
            "port": (str,),
            "protocol": (str,),
            "baudrate": (int,),
            "bytesize": (int,),
            "parity": (str,),
            "stopbits": (int, float),
            "read_timeout_s": (int, float),
            "reconnect_initial_s": (int, float),
            "reconnect_max_s": (int, float),
            "reconnect_watch_s": (int, float),
        }
        protocol = mapping.get("protocol", DEFAULT_PROTOCOL)
        if not isinstance(protocol, str):
            raise invalid("protocol", "str", protocol, section="shoe")
        parts = shoe_protocol(protocol)
        other = [
            name
            for name in protocol_names()
            if name != protocol and isinstance(mapping.get(name), Mapping)
        ]
        if other:
            raise ConfigurationError(
                f"[shoe.{other[0]}] is for the {other[0]} protocol; [shoe] protocol is {protocol}"
            )
        settings = {key: value for key, value in mapping.items() if key in expected}
        for key, value in settings.items():
            types = expected[key]
            if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
                raise invalid(key, " or ".join(t.__name__ for t in types), value, section="shoe")
        rest = {k: v for k, v in mapping.items() if k not in expected and k != protocol}
        options = parts.options.from_mapping(mapping.get(protocol, {}), rest, protocol)
        return cls(**settings, options=options)

    @property
    def parts(self) -> ShoeProtocol:
        """The protocol's parts (its session, speaker and options classes)."""
        return shoe_protocol(self.protocol)

    def make_session(self) -> ShoeSession:
        return self.parts.session.from_options(self.options or self.parts.options())

    @property
    def effective_baudrate(self) -> int:
        return self.baudrate or self.parts.session.default_baudrate


class PortBusy(DeviceError):
    """Another program holds the shoe's port: two readers would split its bytes."""


# First reminder that the shoe is still offline, then at a doubling interval up to the cap.
OFFLINE_REMINDER_S: Final = 10.0
OFFLINE_REMINDER_MAX_S: Final = 600.0
FLAP_S: Final = 1.0
"""A connection that ends within this, having heard nothing, is a flapping link: the next
open waits the doubling delay instead of at once."""


def open_port(config: ShoeConfig) -> serial.SerialBase:
    """Open the configured port exclusively; :class:`PortBusy` if another program holds it,
    :class:`DeviceError` if it cannot be opened.

    Exclusive is pyserial's ``flock(LOCK_EX | LOCK_NB)`` on POSIX: advisory, so it keeps out
    every program that asks for the port the same way (this driver, ``shoe monitor``, any
    pyserial program opening with ``exclusive=True``), not one that ignores locks. ``TIOCEXCL``
    is not used: it does not stop root, and on a tty that stays open elsewhere (a pty, a
    serial server) it outlives a killed daemon and would lock out its own restart.
    """
    try:
        return serial.serial_for_url(
            config.port,
            baudrate=config.effective_baudrate,
            bytesize=config.bytesize,
            parity=PARITIES[config.parity],
            stopbits=STOP_BITS[config.stopbits],
            timeout=config.read_timeout_s,
            write_timeout=1.0,
            exclusive=True,
        )
    except (serial.SerialException, OSError, ValueError) as error:
        if getattr(error, "errno", None) in (errno.EAGAIN, errno.EWOULDBLOCK):
            raise PortBusy(
                f"shoe port {config.port} is in use by another program (it is opened "
                "exclusively: stop the other reader, a table daemon or a shoe monitor)"
            ) from error
        raise DeviceError(f"cannot open shoe port {config.port}: {error}") from error


class ShoeDriver:
    """Reads one shoe and hands its events to ``sink``; use as a context manager.

    ``sink`` is called on the reader thread with each event, in order (see
    :data:`EventSink`). ``clock`` stamps events (wall-clock seconds);
    timers use :func:`time.monotonic`. ``on_result`` is called on the reader thread with each
    hand result the shoe reports itself (Angel Eye ``G``), after the events that came before
    it went to ``sink``: the table's settlement can be cross-checked with it (see
    :mod:`controller.service.shoe_results`). ``resume_after`` is the resume point of a restarted
    table, the last shoe sequence number in its journal (None: a table that has none): the
    session numbers on from it, so the first frame shows what was sent while no one read.
    """

    def __init__(
        self,
        config: ShoeConfig,
        sink: EventSink,
        clock: Callable[[], float] = time.time,
        on_result: Callable[[ShoeResult], None] | None = None,
        resume_after: int | None = None,
    ) -> None:
        self.config = config
        self._sink = sink
        self.on_result = on_result
        self.last_result: ShoeResult | None = None
        """The last hand result the shoe reported (Angel Eye ``G``)."""
        self.ever_online = False
        self.session = config.make_session()
        if resume_after is not None:
            self.session.resume(resume_after)
        self._clock = clock
        self._stop = threading.Event()
        self._commands: queue.SimpleQueue[HostCommand] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._online: bool | None = None
        self._delay = config.reconnect_initial_s
        self._heard = False
        self._offline_since: float | None = None
        self._reminder_at = 0.0
        self.connects = 0
        """Times the port was opened."""
        self.failed_opens = 0
        """Times opening the port failed (each followed by a wait: the watch interval for a
        port that is not there, a doubling delay for one another program holds)."""

    @property
    def online(self) -> bool:
        return bool(self._online)

    def start(self) -> None:
        if self._thread is not None:
            raise DeviceError("the shoe driver is already running")
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name=f"shoe-reader {self.config.port}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the reader thread and close the port."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        thread.join(timeout)
        if thread.is_alive():  # pragma: no cover - a read is bounded by read_timeout_s
            raise DeviceError(f"the shoe reader for {self.config.port} did not stop")

    def __enter__(self) -> ShoeDriver:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- host commands ----------------------------------------------------------------------

    def send(self, command: HostCommand) -> None:
        """Queue a command for the shoe; :class:`DeviceError` while the shoe is offline.

        The answer arrives as an event (:class:`ShoeLockChanged`, :class:`ShoeFault`).
        """
        if command not in self.session.capabilities.commands:
            raise ConfigurationError(
                f"the {self.config.protocol} shoe protocol has no {command.value} command"
            )
        if not self.online:
            raise DeviceError(f"the shoe on {self.config.port} is offline")
        self._commands.put(command)

    def lock(self) -> None:
        self.send(HostCommand.LOCK)

    def unlock(self) -> None:
        self.send(HostCommand.UNLOCK)

    def clear_error(self) -> None:
        self.send(HostCommand.CLEAR_ERROR)

    # -- the reader thread ------------------------------------------------------------------

    def _emit(self, event: ShoeEvent) -> None:
        self._sink(event)

    def _result(self, result: ShoeResult) -> None:
        self.last_result = result
        if self.on_result is not None:
            try:
                self.on_result(result)
            except Exception:  # the cross-check must never stop the reader of the shoe
                logger.exception("the shoe-result callback failed")

    def _set_online(self, online: bool, reason: str = "") -> None:
        if self._online is online:
            return
        self._online = online
        at = self._clock()
        if online:
            self.ever_online = True
            logger.info("shoe online on %s", self.config.port)
            self._emit(ShoeOnline(self.config.port, at))
        else:
            logger.warning("shoe offline on %s: %s", self.config.port, reason)
            self._emit(ShoeOffline(self.config.port, reason, at))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                port = open_port(self.config)
            except PortBusy as error:
                # Not a cable: a person must act, so every attempt says so, ever less often.
                self.failed_opens += 1
                self._set_online(False, str(error))
                logger.error("%s; retrying in %.2f s", error, self._delay)
                self._stop.wait(self._delay)
                self._delay = min(self._delay * 2, self.config.reconnect_max_s)
                continue
            except DeviceError as error:
                # The device is not there: look again soon, at a fixed interval, because what
                # the shoe sends before the port is open again is gone.
                self.failed_opens += 1
                self._set_online(False, str(error))
                self._still_offline(str(error))
                self._stop.wait(self.config.reconnect_watch_s)
                continue
            self.connects += 1
            self._offline_since = None
            opened = time.monotonic()
            self._heard = False
            try:
                self._serve(port)
            except Exception as error:
                # A bug in a session must not silently kill the only reader of the shoe:
                # the table hears that the shoe is offline, the log has the traceback, and
                # the driver starts again on a fresh connection.
                logger.exception("shoe driver failed on %s", self.config.port)
                self._set_online(False, f"driver error: {error!r}")
                self._back_off()
            else:
                if not self._heard and time.monotonic() - opened < FLAP_S:
                    # A link that opens and fails at once, saying nothing: do not hammer it.
                    self._back_off()
                elif not self._stop.is_set():
                    self._delay = self.config.reconnect_initial_s
            finally:
                self.session.closed()
                with contextlib.suppress(serial.SerialException, OSError):
                    port.close()  # the port may already be gone

    def _back_off(self) -> None:
        self._stop.wait(self._delay)
        self._delay = min(self._delay * 2, self.config.reconnect_max_s)

    def _still_offline(self, reason: str) -> None:
        """Each retry at DEBUG; a reminder at a slowing pace (the offline event said it once)."""
        now = time.monotonic()
        if self._offline_since is None:
            self._offline_since, self._reminder_at = now, now + OFFLINE_REMINDER_S
        logger.debug("%s; looking again in %.2f s", reason, self.config.reconnect_watch_s)
        if now >= self._reminder_at:
            offline_for = now - self._offline_since
            logger.warning(
                "the shoe on %s is still offline after %.0f s: %s",
                self.config.port,
                offline_for,
                reason,
            )
            self._reminder_at = now + min(offline_for, OFFLINE_REMINDER_MAX_S)

    def _write(self, port: serial.SerialBase, data: bytes) -> None:
        if data:
            logger.log(RAW, "tx %s", data.hex(" "))
            port.write(data)

    def _serve(self, port: serial.SerialBase) -> None:
        session = self.session
        heartbeat_timeout = session.capabilities.heartbeat_timeout_s
        last_heard = time.monotonic()
        while True:  # drop commands queued for a previous connection
            try:
                self._commands.get_nowait()
            except queue.Empty:
                break
        try:
            self._write(port, session.opened(last_heard))
            if heartbeat_timeout is None:
                self._set_online(True)
            while not self._stop.is_set():
                while True:
                    try:
                        command = self._commands.get_nowait()
                    except queue.Empty:
                        break
                    self._write(port, session.command(command))
                data = port.read(1)
                if data:
                    waiting = port.in_waiting
                    if waiting:
                        data += port.read(waiting)
                now = time.monotonic()
                if data:
                    logger.log(RAW, "rx %s", data.hex(" "))
                    reaction = session.receive(data, self._clock(), now)
                    if reaction.frames:
                        last_heard = now
                        self._heard = True
                        if not self._online:
                            self._set_online(True)
                    results = iter(reaction.results)
                    place, result = next(results, (None, None))
                    for number, event in enumerate(reaction.events):
                        while result is not None and place == number:
                            self._result(result)
                            place, result = next(results, (None, None))
                        self._emit(event)
                    while result is not None:
                        self._result(result)
                        place, result = next(results, (None, None))
                    self._write(port, reaction.to_send)
                self._write(port, session.poll(now))
                if heartbeat_timeout is not None and now - last_heard > heartbeat_timeout:
                    self._set_online(False, f"no frame from the shoe for {heartbeat_timeout} s")
                    if self._online is False and now - last_heard > 2 * heartbeat_timeout:
                        # Reopen: a serial-to-Ethernet link can be dead without an error.
                        return
        except (serial.SerialException, OSError) as error:
            # Straight back to opening it: if the device is gone, the watch looks for it.
            self._set_online(False, f"port lost: {error}")
