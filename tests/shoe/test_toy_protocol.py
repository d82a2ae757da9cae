"""A protocol added as one plug-in: the toy protocol of :mod:`tests.shoe.toy_protocol`, known
to livetable only through one registry line, passes the contract suite, is read by the
monitor, and deals a baccarat round into a table: the simulated shoe on a real pty, the real
driver, the table's runtime and journal."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from controller.kernel.cards import parse_card
from controller.service.assembly import Effects, assemble, last_shoe_sequence
from controller.service.config import LivetableConfig
from controller.service.runtime import TableRuntime
from controller.table.config import TableConfig
from controller.table.effects import EffectBatch, Published, PublishEvent
from controller.table.events import RoundRequested, SupervisorCommanded, TimerExpired
from controller.table.state import BURN_PHASES, Phase
from drivers.shoe.codec import Decoder, Frame
from drivers.shoe.driver import ShoeConfig
from drivers.shoe.registry import protocol_names, register, unregister
from simulators.shoe import Emitted, ShoeSimulator
from tests.shoe import toy_protocol
from tests.shoe.contract import ShoeContract, generate
from tests.shoe.monitor import shoe_monitor

# Generous: the machine is shared; nothing here measures speed.
TIMEOUT_S = 20.0


@pytest.fixture(autouse=True)
def toy_registered() -> Iterator[None]:
    register("toy", "tests.shoe.toy_protocol")  # the one line that makes it a protocol
    yield
    unregister("toy")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    generate(metafunc)


class TestToyContract(ShoeContract):
    """The whole contract suite, over the toy protocol."""

    protocols = (toy_protocol.PROTOCOL,)


def test_the_toy_codec_is_a_decoder_of_frames() -> None:
    decoder: Decoder[Frame] = toy_protocol.ToyDecoder()
    frames = [
        toy_protocol.ToyFrame("C", 1, "AS"),
        toy_protocol.ToyFrame("F", 2, "E2 overdraw (too many cards drawn)"),
    ]
    stream = b"\x00$*junk" + b"".join(frame.to_bytes() for frame in frames)
    assert [f for i in range(len(stream)) for f in decoder.feed(stream[i : i + 1])] == frames
    assert decoder.buffered == 0
    assert toy_protocol.ToyFrame.from_bytes(frames[0].to_bytes()) == frames[0]


def test_registered_it_is_in_every_list_and_configurable(tmp_path: Path) -> None:
    assert "toy" in protocol_names()
    config = ShoeConfig.from_mapping({"port": str(tmp_path / "shoe"), "protocol": "toy"})
    assert config.effective_baudrate == 19200
    assert isinstance(config.make_session(), toy_protocol.ToySession)


def test_the_monitor_reads_the_toy_shoe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "shoe"
    with (
        ShoeSimulator("toy", link, seed=2) as shoe,
        shoe_monitor(capsys, link, "toy", "--count", "3", "--json") as monitor,
    ):
        drawn = [shoe.draw(), shoe.draw()]  # after ShoeOnline: three events in all
    assert monitor.status == 0
    printed = monitor.printed + capsys.readouterr().out
    for card in drawn:
        assert f'"card": "{card.card}", "sequence": {card.sequence}' in printed


def _step_until(runtime: TableRuntime, done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not done():
        assert time.monotonic() < deadline, f"no {what} in {TIMEOUT_S} s"
        runtime.step(0.05)


def test_a_baccarat_round_dealt_by_the_toy_shoe_into_a_table(tmp_path: Path) -> None:
    link = tmp_path / "shoe"
    config = LivetableConfig(
        table=TableConfig(table_id="t1", game="baccarat", journal_path=tmp_path / "t1.journal"),
        shoe=ShoeConfig.from_mapping(
            {"port": str(link), "protocol": "toy", "reconnect_initial_s": 0.05}
        ),
    )
    published: list[Published] = []

    def publish(batch: EffectBatch) -> None:
        published.extend(e for e in batch.effects if isinstance(e, Published))

    with (
        ShoeSimulator("toy", link, seed=3) as shoe,
        assemble(config, lambda devices: Effects(devices, publish)) as table,
    ):
        table.start()
        runtime, journal = table.runtime, table.table.journal
        machine = runtime.table.machine
        driver = table.devices.shoe_driver
        _step_until(runtime, lambda: driver.online and runtime.events.empty(), "shoe online")

        def draw() -> Emitted:
            drawn = shoe.draw()
            _step_until(
                runtime,
                lambda: last_shoe_sequence(journal) == drawn.sequence,
                f"shoe frame {drawn.sequence} in the journal",
            )
            return drawn

        runtime.handle(SupervisorCommanded("sam/1", "new_shoe", "sam", "supervisor", time.time()))
        while machine.state.phase in BURN_PHASES:
            draw()
        runtime.handle(RoundRequested("platform/1", "platform", time.time()))
        (timer,) = machine.state.timers
        runtime.handle(TimerExpired(timer, time.time()))
        dealt = []
        while machine.state.phase is Phase.DEALING:
            dealt.append(draw())
        assert machine.state.phase is Phase.SHOE_READY, machine.state.phase
    settled = [
        p.payload for p in published if isinstance(p, PublishEvent) and p.name == "round_settled"
    ]
    assert len(settled) == 1, published
    result = settled[0]["result"]
    in_hands = sorted(result["player"] + result["banker"])
    assert in_hands == sorted(str(parse_card(card.card or "")) for card in dealt)
    assert 4 <= len(dealt) <= 6
