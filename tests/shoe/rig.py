"""A shoe simulator on a real pty with the real driver reading it, for contract tests.

Transports: ``pty`` (the driver opens the simulator's symlink) and ``tcp`` (the driver opens
``socket://127.0.0.1:PORT`` served by :class:`SerialServer`, which plays a MOXA NPort in TCP
server mode: raw bytes both ways between one TCP client and the serial line).
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from drivers.shoe.driver import ShoeConfig, ShoeDriver
from drivers.shoe.events import CardDrawn, ShoeEvent, ShoeOnline
from drivers.shoe.registry import PROTOCOL_NAMES, ShoeProtocol, protocol
from drivers.shoe.sessions import Capabilities
from drivers.shoe.speaker import ShoeVariant
from simulators.shoe import Emitted, FaultPlan, ShoeSimulator
from tests.support.wait import wait_for_item


def protocol_of(label: str) -> str:
    """``angel-eye@wrap9+bit7-clear`` -> ``angel-eye``."""
    return label.split("@", 1)[0]


def variant_of(label: str) -> ShoeVariant | None:
    """The kind of shoe a suite label names (``angel-eye@wrap9``), or None: the protocol's
    plain shoe."""
    name, _, variant = label.partition("@")
    return protocol(name).speaker.variants[variant] if variant else None


def shoe_of(label: str) -> dict[str, object]:
    """The simulator's settings for a suite label."""
    variant = variant_of(label)
    return dict(variant.settings) if variant else {}


def capabilities(label: str) -> Capabilities:
    """What the protocol of a suite label declares it can do."""
    return protocol(protocol_of(label)).session.capabilities


def gaps_visible(label: str) -> bool:
    """Whether the driver can name the frames this label's shoe lost."""
    variant = variant_of(label)
    return capabilities(label).numbered and (variant is None or variant.gaps_visible)


def labels(parts: ShoeProtocol) -> list[str]:
    """The suite labels of a protocol: its plain shoe, then each of its variants."""
    return [parts.name, *(f"{parts.name}@{variant}" for variant in parts.speaker.variants)]


# The protocols the suites run over, from the one registry of shoe protocols, and the kinds
# of shoe each comes in: "angel-eye@VARIANT" is a simulated shoe counting SEQ that way (the
# driver keeps its default profile, auto, and must find it).
ALL = [label for name in PROTOCOL_NAMES for label in labels(protocol(name))]
ANGEL_EYE_VARIANTS = [label for label in ALL if label.startswith("angel-eye@")]
SEQUENCED = [label for label in ALL if capabilities(label).numbered]
WITH_COMMANDS = [label for label in ALL if capabilities(label).commands]
GAPS_VISIBLE = [label for label in SEQUENCED if gaps_visible(label)]
"""Shoes whose lost frames the driver can name (an any-byte SEQ shows repeats, not gaps)."""

# Generous: the machine is shared; nothing here measures speed.
EVENT_TIMEOUT_S = 10.0


def expected_variant(label: str) -> str:
    """The profile the driver must find for a suite label's shoe (``angel-eye``: mod10)."""
    return label.partition("@")[2].partition("+")[0] or "mod10"


@dataclass
class Rig:
    simulator: ShoeSimulator
    driver: ShoeDriver
    queue: queue.Queue[ShoeEvent]
    label: str
    """The suite label the rig was made for (``angel-eye@wrap9+bit7-clear``...)."""
    seen: list[ShoeEvent] = field(default_factory=list)
    """Every event taken off the queue, in order."""

    def next_event(self, timeout: float = EVENT_TIMEOUT_S) -> ShoeEvent:
        event = self.queue.get(timeout=timeout)
        self.seen.append(event)
        return event

    def wait_for(
        self, predicate: Callable[[ShoeEvent], object], timeout: float = EVENT_TIMEOUT_S
    ) -> ShoeEvent:
        """Collect events until one matches; fail the test if none does in time."""
        try:
            return wait_for_item(
                self.queue, predicate, timeout, "a matching event", taken=self.seen
            )
        except AssertionError as error:
            raise AssertionError(
                f"{error}; saw {self.seen[-10:]}; the shoe sent {self.simulator.truth[-5:]}, "
                f"plugged={self.simulator.plugged}"
            ) from None

    def wait_online(self) -> ShoeEvent:
        return self.wait_for(lambda event: isinstance(event, ShoeOnline))

    def wait_for_card(self, record: Emitted, timeout: float = EVENT_TIMEOUT_S) -> CardDrawn:
        """Wait until the driver delivers ``record``, a card the simulator sent intact.

        The marker that ends a test's traffic: the driver reads the line in order, so once it
        delivered this card it has read everything the shoe sent before it, and what did not
        arrive by then never will. Draw it last, with the wire's faults off. Where the driver's
        numbers are the shoe's it is the card with that number; elsewhere (no numbers, or any
        byte as SEQ) it is the n-th delivery of its face, n counting the intact cards of that
        face sent up to it (a copy delivered twice or invented ends the wait early, and the
        test's comparison with the truth then fails, as it must).
        """
        damaged = self.simulator.wire.damaged
        assert record.event == "card" and record.sequence not in damaged, record
        numbered = gaps_visible(self.label)
        sent = self.simulator.truth[: self.simulator.truth.index(record) + 1]
        copies = sum(
            r.event == "card" and r.card == record.card and r.sequence not in damaged for r in sent
        )

        def face(event: ShoeEvent) -> bool:
            return isinstance(event, CardDrawn) and str(event.card) == record.card

        def matches(event: ShoeEvent) -> bool:
            if numbered:
                return isinstance(event, CardDrawn) and event.sequence == record.sequence
            return face(event) and sum(map(face, self.seen)) == copies

        card = self.wait_for(matches, timeout)
        assert isinstance(card, CardDrawn)
        return card


class SerialServer:
    """A serial-to-Ethernet server for tests: relays one TCP client to the tty at ``link``."""

    def __init__(self, link: Path) -> None:
        self.link = link
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="serial-server", daemon=True)

    def __enter__(self) -> SerialServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(5.0)
        self._listener.close()

    def _serve(self) -> None:
        self._listener.settimeout(0.05)
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            with client:
                self._relay(client)

    def _relay(self, client: socket.socket) -> None:
        try:
            tty = os.open(self.link, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError:
            return  # no serial line: drop the client, it will reconnect
        try:
            while not self._stop.is_set():
                readable, _, _ = select.select([client, tty], [], [], 0.05)
                if tty in readable:
                    data = os.read(tty, 4096)
                    if not data:
                        return
                    client.sendall(data)
                if client in readable:
                    data = client.recv(4096)
                    if not data:
                        return
                    os.write(tty, data)
        except OSError:
            return  # the serial side went away (cable pulled): the TCP session ends too
        finally:
            os.close(tty)


@contextmanager
def shoe_rig(
    tmp_path: Path,
    protocol: str,
    faults: FaultPlan | None = None,
    seed: int = 7,
    decks: int = 8,
    cut_card_depth: int = 14,
    wait_online: bool = True,
    bcc_includes_stx: bool | None = None,
    transport: str = "pty",
    **config: object,
) -> Iterator[Rig]:
    label, protocol = protocol, protocol_of(protocol)
    link = tmp_path / f"shoe-{protocol}"
    events: queue.Queue[ShoeEvent] = queue.Queue()
    shoe = shoe_of(label)
    if bcc_includes_stx is not None:
        shoe["bcc_includes_stx"] = bcc_includes_stx
    simulator = ShoeSimulator(
        protocol,
        link,
        seed=seed,
        decks=decks,
        cut_card_depth=cut_card_depth,
        faults=faults,
        truth_path=tmp_path / f"truth-{label}.jsonl",
        **shoe,
    )
    settings: dict[str, object] = {"reconnect_initial_s": 0.05, "reconnect_max_s": 0.4}
    settings.update(config)
    with contextlib.ExitStack() as stack:
        stack.enter_context(simulator)
        port = str(link)
        if transport == "tcp":
            port = f"socket://127.0.0.1:{stack.enter_context(SerialServer(link)).port}"
        driver = ShoeDriver(ShoeConfig(port, protocol, **settings), events.put)  # type: ignore[arg-type]
        stack.enter_context(driver)
        rig = Rig(simulator, driver, events, label)
        if wait_online:
            rig.wait_online()
        yield rig
