"""``livetable bench console``: the supervisors' console with a studio of live tables, in a
real browser, for minutes on end.

One run, all on this machine, all real: mosquitto on a free loopback port, the demo's
studio against it (``livetable demo --tables N --broker ...``: N ``livetable run`` daemons
with simulated shoes, a dealer, a platform and a supervisor each), ``livetable console``
as a child process, and Debian's Chromium (headless, driven by playwright) signed in and
showing the wall. Beside the console, the bench's own subscriber (the one API client,
:class:`controller.client.api_client.StudioClient`, in a process of its own) stamps every
``state`` message on arrival (``time.time()``); the page stamps every tile it draws
(``Date.now()``, the same clock: one machine) with the table and the state's journal head
(``journal.seq``: a state that changed no event keeps the last event's ``seq``).

- **update → screen**: for each state message, from its arrival at the bench's subscriber
  to the first tile drawn for that table whose ``journal.seq`` is at least its own (a
  console that coalesces a burst draws only the last: the earlier ones count until then).
  Percentiles over the whole run.
- **live for the whole run**: the page is never reloaded (a mark set in the page at the
  start is still there at the end, and no navigation happened) and it drew tiles in every
  minute.
- **the console server's memory**: resident set (``VmRSS``) every ``--sample-s`` seconds;
  the first sample after the warm-up against the last, and the peak.

Figures from one run: the machine is shared and noisy; compare runs on the same machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from controller.kernel.cli_support import add_json, examples, positive_int, positive_seconds
from controller.kernel.stats import percentile

logger = logging.getLogger(__name__)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Chromium as root in a container, and without the background services this machine's
# closed network refuses (they retry, and their errors fill the log).
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
LATENCY_TARGET_MS = 200.0
WARM_UP_S = 30.0
START_TIMEOUT_S = 120.0
# The page keeps what it drew here (table, seq, Date.now()): its stream.js fills it.
RENDERS = "window.livetableRenders"
ACCOUNT = "bench"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "console",
        help="the web console with a studio of live tables in Chromium: update -> screen",
        description="The supervisors' console with a studio of live tables, all real and on "
        "this machine: mosquitto, the demo's studio (N livetable run daemons and their "
        "simulated people), livetable console, and Debian's Chromium showing the wall, "
        "driven by playwright. Reports each update's time from the MQTT message to the tile "
        "on screen (p50, p99, max), that the page stayed live without a reload, and the "
        "console server's memory over the run. Needs chromium (Debian) and playwright (the "
        "test extra).",
        epilog=examples(
            "livetable bench console",
            "livetable bench console --tables 5 --duration-s 60 --json",
        ),
    )
    parser.add_argument("--tables", type=positive_int, default=20, help="tables (default 20)")
    parser.add_argument(
        "--duration-s",
        type=positive_seconds,
        default=600.0,
        help="how long the page is watched after the warm-up (default 600)",
    )
    parser.add_argument(
        "--sample-s",
        type=positive_seconds,
        default=10.0,
        help="how often the console's memory is read (default 10)",
    )
    parser.add_argument("--dir", type=Path, default=None, help="work folder (default: a temp one)")
    add_json(parser)
    parser.set_defaults(func=run)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class Stamps:
    """Every state message's arrival at the bench's subscriber, by table, and the matching
    of the tiles the page drew against them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.waiting: dict[str, list[tuple[int, float]]] = {}
        self.latencies_ms: list[float] = []
        self.arrived = 0

    def arrived_at(self, table: str, seq: int, at: float) -> None:
        with self._lock:
            self.arrived += 1
            self.waiting.setdefault(table, []).append((seq, at))

    def drawn(self, table: str, seq: int, at_ms: float) -> None:
        with self._lock:
            waiting = self.waiting.get(table, [])
            shown = [(s, t) for s, t in waiting if s <= seq]
            for _seq, arrived in shown:
                self.latencies_ms.append(at_ms - arrived * 1000.0)
            self.waiting[table] = [(s, t) for s, t in waiting if s > seq]

    def forget(self) -> None:
        """Start counting now (the warm-up's states are not the run's)."""
        with self._lock:
            self.waiting.clear()
            self.latencies_ms.clear()
            self.arrived = 0

    def unshown(self, older_than_s: float) -> int:
        cut = time.time() - older_than_s
        with self._lock:
            return sum(1 for waiting in self.waiting.values() for _s, t in waiting if t < cut)


class Stamper:
    """The stamping process's lines, read on a thread into :class:`Stamps`."""

    def __init__(self, process: Any, stamps: Stamps) -> None:
        self.process = process
        self.stamps = stamps
        self.ready = threading.Event()
        self._thread = threading.Thread(target=self._read, name="stamps", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            fields = line.split()
            if fields == ["ready"]:
                self.ready.set()
            elif len(fields) == 3:
                self.stamps.arrived_at(fields[0], int(fields[1]), float(fields[2]))


@contextlib.contextmanager
def _stamper(port: int, stamps: Stamps, log: Path) -> Iterator[Stamper]:
    with log.open("wb") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "controller.tools.bench_console", "--stamps", str(port)],
            stdout=subprocess.PIPE,
            stderr=errors,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        try:
            yield Stamper(process, stamps)
        finally:
            process.terminate()
            process.wait(10)


def stamp_states(port: int) -> None:
    """The stamping process: one line ``table seq time`` per state message, on arrival."""
    from controller.client.api_client import Account, StudioClient

    out_lock = threading.Lock()

    def on_update(update: Any) -> None:
        if update.kind != "state":
            return
        at = time.time()
        with out_lock:
            # By the journal's head: states that changed no event share a seq.
            print(update.table_id, int(update.body["journal"]["seq"]), repr(at), flush=True)

    client = StudioClient(
        "127.0.0.1", port, Account("viewer", "bench-stamps"), on_update=on_update, backfill=0
    )
    if not client.wait_connected(30):
        raise SystemExit("the stamping subscriber could not connect")
    print("ready", flush=True)
    threading.Event().wait()


@contextlib.contextmanager
def _process(command: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[Any]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _wait_listening(port: int, process: Any, log: Path) -> None:
    import socket

    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"livetable console stopped: {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.2)
    raise RuntimeError("livetable console did not listen in time")


def measure(tables: int, duration_s: float, sample_s: float, work: Path) -> dict[str, Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as missing:
        raise RuntimeError(
            "playwright is not installed (pip install playwright; the test extra has it)"
        ) from missing
    if not Path(CHROMIUM).exists():
        raise RuntimeError("chromium is not installed (apt-get install chromium)")
    from controller.client.api_client import Account, StudioClient
    from simulators.broker import free_port, start_broker

    livetable = [sys.executable, "-m", "controller.tools.cli"]
    broker = start_broker(work / "broker", extra_config="allow_anonymous true\n")
    stamps = Stamps()
    console_port = free_port()
    (work / "console.toml").write_text(
        f'[console]\nlisten = "127.0.0.1:{console_port}"\n\n'
        f'[mqtt]\nhost = "127.0.0.1"\nport = {broker.port}\nprotocol = "5"\n'
    )
    results: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        stack.callback(broker.stop)
        demo = stack.enter_context(
            _process(
                [
                    *livetable,
                    "demo",
                    "--tables",
                    str(tables),
                    "--broker",
                    f"mqtt://127.0.0.1:{broker.port}",
                    "--plain",
                    "--rounds",
                    "1000000",
                    "--timeout-s",
                    str(int(duration_s + WARM_UP_S + START_TIMEOUT_S * 2)),
                    "--work-dir",
                    str(work / "studio"),
                ],
                work / "demo.log",
            )
        )
        console = stack.enter_context(
            _process(
                [*livetable, "console", "--config", str(work / "console.toml")],
                work / "console.log",
            )
        )
        _wait_listening(console_port, console, work / "console.log")
        # The stamps are taken in a process of their own: in this one, the browser's driver
        # would delay the MQTT thread (seen: stamps 100 ms late, after the page had drawn).
        stamper = stack.enter_context(_stamper(broker.port, stamps, work / "stamper.log"))
        subscriber = StudioClient("127.0.0.1", broker.port, Account("viewer", "bench-tables"))
        stack.callback(subscriber.close)
        if not subscriber.wait_connected(30) or not stamper.ready.wait(30):
            raise RuntimeError("the bench's subscribers could not connect")
        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        stack.callback(browser.close)
        page = browser.new_page(viewport={"width": 1920, "height": 1080})
        navigations: list[str] = []
        page.on("framenavigated", lambda frame: navigations.append(frame.url))
        base = f"http://127.0.0.1:{console_port}"
        page.goto(f"{base}/signin")
        page.fill("[data-testid=signin-username]", ACCOUNT)
        page.fill("[data-testid=signin-password]", "any")
        page.click("[data-testid=signin-submit]")
        page.wait_for_url(f"{base}/")

        def every_table_shown() -> bool:
            feeds = subscriber.feeds()
            shown = page.evaluate("document.querySelectorAll('article.tile').length")
            return len(feeds) >= tables and shown >= tables

        deadline = time.monotonic() + START_TIMEOUT_S
        while not every_table_shown():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the wall did not show {tables} tables in time")
            time.sleep(0.5)
        time.sleep(WARM_UP_S)
        page.evaluate(f"{RENDERS} = []; window.livetableBenchMark = 'kept'")
        stamps.forget()
        navigations.clear()
        memory: list[tuple[float, float]] = []
        drawn_per_minute: dict[int, int] = {}
        started = time.monotonic()
        next_sample = started
        while (elapsed := time.monotonic() - started) < duration_s:
            for render in page.evaluate(f"{RENDERS}.splice(0)"):
                stamps.drawn(render["table"], int(render["seq"]), float(render["at"]))
                minute = int(elapsed // 60)
                drawn_per_minute[minute] = drawn_per_minute.get(minute, 0) + 1
            if time.monotonic() >= next_sample:
                memory.append((round(elapsed, 1), round(rss_mb(console.pid), 1)))
                next_sample += sample_s
            page.wait_for_timeout(250)
        kept = page.evaluate("window.livetableBenchMark") == "kept"
        latencies = stamps.latencies_ms
        minutes = max(1, int(duration_s // 60))
        results = {
            "tables": tables,
            "duration_s": duration_s,
            "states_arrived": stamps.arrived,
            "states_shown": len(latencies),
            "states_never_shown_after_5s": stamps.unshown(5.0),
            "p50_ms": round(percentile(latencies, 50) if latencies else 0.0, 1),
            "p99_ms": round(percentile(latencies, 99) if latencies else 0.0, 1),
            "max_ms": round(max(latencies, default=0.0), 1),
            "target_p99_ms": LATENCY_TARGET_MS,
            "reloaded": not kept or bool(navigations),
            "minutes_without_a_tile_drawn": sum(
                1 for minute in range(minutes) if not drawn_per_minute.get(minute)
            ),
            "console_rss_mb": {
                "first": memory[0][1] if memory else None,
                "last": memory[-1][1] if memory else None,
                "peak": max((m for _t, m in memory), default=None),
                "samples": memory,
            },
            "demo_alive": demo.poll() is None,
            "machine": {
                "cores": os.cpu_count(),
                "cpu": platform.processor() or platform.machine(),
                "load_average": os.getloadavg(),
            },
        }
    return results


def run(args: argparse.Namespace) -> int:
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        results = measure(args.tables, args.duration_s, args.sample_s, args.dir)
    else:
        with tempfile.TemporaryDirectory(prefix="livetable-bench-console-") as work:
            results = measure(args.tables, args.duration_s, args.sample_s, Path(work))
    if args.json:
        json.dump(results, sys.stdout)
        print()
        return 0
    memory = results["console_rss_mb"]
    verdict = "met" if results["p99_ms"] <= LATENCY_TARGET_MS else "NOT met"
    print(
        f"console with {results['tables']} live tables, {results['duration_s']:g} s in "
        f"Chromium ({results['machine']['cores']} cores, load {results['machine']['load_average']})"
    )
    print(
        f"update -> screen: {results['states_shown']} of {results['states_arrived']} states: "
        f"p50 {results['p50_ms']} ms  p99 {results['p99_ms']} ms  max {results['max_ms']} ms "
        f"({verdict}: p99 <= {LATENCY_TARGET_MS:g} ms)"
    )
    print(
        f"page: {'reloaded' if results['reloaded'] else 'never reloaded'}, "
        f"{results['minutes_without_a_tile_drawn']} minute(s) without a tile drawn"
    )
    print(
        f"console server memory: {memory['first']} MB after the warm-up, {memory['last']} MB "
        f"at the end, peak {memory['peak']} MB"
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--stamps":
        stamp_states(int(sys.argv[2]))
