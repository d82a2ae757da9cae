"""One way to name a broker on a command line: every form the one parser takes
(``controller/mqtt/broker_name.py``), the one-line error for each bad one, and the commands
that name a broker (``livetable ctl``, ``livetable demo``) run for real as subprocesses."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.mqtt.broker_name import BrokerName, parse_broker_name
from controller.tools.ctl import ctl_broker
from tests.daemon.test_security import TlsBroker, tls_broker  # noqa: F401 (a fixture)
from tests.support.broker import closed_port

LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]
REPO_ROOT = Path(__file__).resolve().parents[2]
# Only refusals and argument errors here: each ends in a second or two, even loaded.
RUN_TIMEOUT_S = 90.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mq.studio", BrokerName((("mq.studio", 1883),))),
        ("127.0.0.1:11883", BrokerName((("127.0.0.1", 11883),))),
        ("[::1]:1999", BrokerName((("::1", 1999),))),
        ("[::1]", BrokerName((("::1", 1883),))),
        ("::1", BrokerName((("::1", 1883),))),
        ("mqtt://127.0.0.1:11883", BrokerName((("127.0.0.1", 11883),))),
        ("mqtt://mq.studio", BrokerName((("mq.studio", 1883),))),
        ("mqtt://mq.studio:1883/", BrokerName((("mq.studio", 1883),))),
        ("MQTT://mq.studio", BrokerName((("mq.studio", 1883),))),
        ("mqtts://mq.studio", BrokerName((("mq.studio", 8883),), tls=True)),
        ("mqtts://mq.studio:9883", BrokerName((("mq.studio", 9883),), tls=True)),
        ("mqtt://[::1]:1999", BrokerName((("::1", 1999),))),
        (
            "n1:1883,n2:1884, n3",
            BrokerName((("n1", 1883), ("n2", 1884), ("n3", 1883))),
        ),
        (
            "mqtts://n1,n2:9999",
            BrokerName((("n1", 8883), ("n2", 9999)), tls=True),
        ),
        (
            "mqtt://alice:s%40cret@mq:1883",
            BrokerName((("mq", 1883),), login=("alice", "s@cret")),
        ),
        # A password may hold a comma, a colon or an @ (the account ends at the last @).
        (
            "mqtt://alice:a,b:c@d@n1:1883,n2:1883",
            BrokerName((("n1", 1883), ("n2", 1883)), login=("alice", "a,b:c@d")),
        ),
        ("mqtt://alice@mq", BrokerName((("mq", 1883),), login=("alice", None))),
        ("mqtt://alice:@mq", BrokerName((("mq", 1883),), login=("alice", ""))),
        ("mqtt://mq:1883?mqtt=3.1.1", BrokerName((("mq", 1883),), protocol="3.1.1")),
        ("mqtt://mq?mqtt=5", BrokerName((("mq", 1883),), protocol="5")),
        ("  mq:1883  ", BrokerName((("mq", 1883),))),
    ],
)
def test_every_form_names_the_same_kind_of_broker(text: str, expected: BrokerName) -> None:
    assert parse_broker_name(text) == expected


def test_a_ca_makes_a_bare_name_tls_and_a_default_port_fills_the_gaps() -> None:
    assert parse_broker_name("mq", tls=True) == BrokerName((("mq", 8883),), tls=True)
    assert parse_broker_name("mq:1999", tls=True) == BrokerName((("mq", 1999),), tls=True)
    assert parse_broker_name("mqtts://mq", tls=True).nodes == (("mq", 8883),)
    assert parse_broker_name("n1,n2:1", default_port=7).nodes == (("n1", 7), ("n2", 1))
    assert parse_broker_name("mqtt://n1", default_port=7).nodes == (("n1", 7),)


def test_what_a_name_says_back() -> None:
    one = parse_broker_name("mqtt://alice:secret@mq:1999")
    assert (one.host, one.port, one.hosts) == ("mq", 1999, ())
    assert one.url() == "mqtt://mq:1999"  # never the account
    cluster = parse_broker_name("mqtts://n1,[::1]:2")
    assert (cluster.host, cluster.port) == ("n1", 8883)
    assert cluster.hosts == (("n1", 8883), ("::1", 2))
    assert cluster.url() == "mqtts://n1:8883,[::1]:2"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "must look like mqtt://host:port, mqtts://host:port, host:port, host or a list"),
        ("   ", "(empty)"),
        (":1883", "':1883' has no host"),
        ("mqtt://:1883", "':1883' has no host"),
        ("mqtt://", "(no host)"),
        ("mqtt://alice:pw@", "(no host)"),
        ("[::1]x", "'[::1]x' is not [IPv6 address]:port"),
        ("mq:0", "'mq:0': a broker is host:port with a port 1-65535"),
        ("mq:70000", "'mq:70000': a broker is host:port with a port 1-65535"),
        ("mqtt://mq:70000", "'mq:70000': a broker is host:port with a port 1-65535"),
        ("mq:port", "'mq:port': a broker is host:port with a port 1-65535"),
        ("mq:", "'mq:': a broker is host:port with a port 1-65535"),
        ("http://mq:1883", "(unknown scheme 'http://')"),
        ("tcp://mq", "(unknown scheme 'tcp://')"),
        ("ws://mq:9001", "(unknown scheme 'ws://')"),
        ("mq/path", "a scheme is mqtt:// or mqtts://"),
        ("mqtt://mq:1883/x", "a broker URL ends at host:port"),
        ("alice:pw@mq", "an account goes in a URL: mqtt://user:password@host:port"),
        ("mqtt://:pw@mq", "an account without a user name"),
        ("n1:1883,,n2:1883", "an empty broker between commas"),
        ("n1:1883,", "an empty broker between commas"),
        ("n1:1883,n1:1883", "names n1:1883 twice"),
        ("n1,n1:1883", "names n1:1883 twice"),
        ("mqtt://mq?qos=1", "unknown parameter 'qos' (only mqtt=3.1.1 or mqtt=5)"),
        ("mqtt://mq?mqtt=4", "mqtt must be 3.1.1 or 5, not '4'"),
        ("mqtt://[::1:1883", "must look like"),
    ],
)
def test_a_bad_name_is_one_line_saying_what_is_wrong(text: str, said: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_broker_name(text)
    message = str(refused.value)
    assert said in message, message
    assert "\n" not in message


def test_a_plain_url_with_a_ca_is_refused_rather_than_guessed() -> None:
    with pytest.raises(ValueError, match="plain MQTT but --tls-ca asks for TLS: use mqtts://"):
        parse_broker_name("mqtt://mq:8883", tls=True)


# -- the commands, run for real --------------------------------------------------------------


def _run(*argv: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "TMPDIR": str(tmp_path)}
    environment.pop("LIVETABLE_PASSWORD", None)
    return subprocess.run(
        [*LIVETABLE, *argv],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
        cwd=REPO_ROOT,
        env=environment,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("form", ["mqtt://127.0.0.1:{port}", "127.0.0.1:{port}"])
def test_ctl_says_the_broker_it_cannot_reach_in_every_form(tmp_path: Path, form: str) -> None:
    with closed_port() as port:
        done = _run(
            "ctl", "--table", "t1", "--broker", form.format(port=port), "status", tmp_path=tmp_path
        )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert f"the MQTT broker at 127.0.0.1:{port} cannot be reached: connection refused" in lines[0]


def test_ctl_at_port_1_as_the_engineer_typed_it(tmp_path: Path) -> None:
    done = _run(
        "ctl", "--table", "t1", "--broker", "mqtt://127.0.0.1:1", "status", tmp_path=tmp_path
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "broker at 127.0.0.1:1 cannot be reached" in done.stderr, done.stderr


@pytest.mark.parametrize("form", ["127.0.0.1:1", "mqtt://127.0.0.1:1"])
def test_the_demo_says_the_broker_it_cannot_reach_in_every_form(tmp_path: Path, form: str) -> None:
    done = _run("demo", "--plain", "--rounds", "1", "--broker", form, tmp_path=tmp_path)
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors == [
        "livetable: error: the broker at mqtt://127.0.0.1:1 cannot be reached: "
        "connection refused (is the broker running, and is the port right?)"
    ], done.stderr
    assert "round" not in done.stdout


def test_a_cluster_named_to_ctl_is_tried_node_by_node(tmp_path: Path) -> None:
    with closed_port() as first, closed_port() as second:
        done = _run(
            *["ctl", "--table", "t1", "--broker", f"mqtt://127.0.0.1:{first},127.0.0.1:{second}"],
            "status",
            tmp_path=tmp_path,
        )
    assert done.returncode == 1, done.stderr
    assert f"127.0.0.1:{first} cannot be reached" in done.stderr, done.stderr
    assert f"127.0.0.1:{second} cannot be reached" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["--broker", "ws://mq:9001"],
            "--broker: must look like mqtt://host:port, mqtts://host:port, host:port",
        ),
        (
            ["--broker", "mq:70000"],
            "--broker: 'mq:70000': a broker is host:port with a port 1-65535",
        ),
        (["--broker", "mq:0"], "--broker: 'mq:0': a broker is host:port with a port 1-65535"),
        (["--broker", ":1883"], "':1883' has no host"),
        (
            ["--broker", "mqtt://alice:secret@127.0.0.1:1"],
            "ctl takes no password in the URL: give --password-file",
        ),
        (
            ["--broker", "mqtt://alice@127.0.0.1:1", "--user", "bob"],
            "--user bob and the --broker URL's user alice disagree",
        ),
        (
            ["--broker", "mqtt://127.0.0.1:1?mqtt=3.1.1", "--mqtt", "5"],
            "--mqtt 5 and the --broker URL's mqtt=3.1.1 disagree",
        ),
        (
            ["--broker", "mqtt://127.0.0.1:1", "--tls-ca", "ca.pem"],
            "plain MQTT but --tls-ca asks for TLS: use mqtts://",
        ),
    ],
)
def test_ctl_says_a_bad_broker_in_one_line(tmp_path: Path, argv: list[str], said: str) -> None:
    done = _run("ctl", "--table", "t1", *argv, "status", tmp_path=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert "secret" not in done.stderr


@pytest.mark.parametrize(
    ("broker", "said"),
    [
        (
            "ws://mq:9001",
            "argument --broker: must look like mqtt://host:port, mqtts://host:port, host:port",
        ),
        ("mq:70000", "argument --broker: 'mq:70000': a broker is host:port with a port 1-65535"),
        ("mqtt://mq?mqtt=4", "mqtt must be 3.1.1 or 5, not '4'"),
    ],
)
def test_the_demo_says_a_bad_broker_as_a_usage_error(
    tmp_path: Path, broker: str, said: str
) -> None:
    done = _run("demo", "--plain", "--rounds", "1", "--broker", broker, tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr.splitlines()[-1], done.stderr


def test_ctl_takes_the_user_and_the_version_from_the_url() -> None:
    args = argparse.Namespace(
        broker="mqtt://alice@mq:1999?mqtt=3.1.1", tls_ca=None, port=None, user=None, mqtt=None
    )
    name = ctl_broker(args)
    assert (name.nodes, args.user, args.mqtt) == ((("mq", 1999),), "alice", "3.1.1")
    args = argparse.Namespace(broker="mq", tls_ca="ca.pem", port=None, user="bob", mqtt=None)
    name = ctl_broker(args)
    assert (name.nodes, name.tls, args.user, args.mqtt) == ((("mq", 8883),), True, "bob", "5")
    args = argparse.Namespace(broker="n1,n2:2", tls_ca=None, port=7, user=None, mqtt="3.1.1")
    assert ctl_broker(args).nodes == (("n1", 7), ("n2", 2))
    assert args.mqtt == "3.1.1"


def test_ctl_speaks_tls_to_an_mqtts_broker_trusting_its_ca_or_the_systems(
    tmp_path: Path,
    tls_broker: TlsBroker,  # noqa: F811 (the fixture)
) -> None:
    """A real mosquitto with a TLS listener whose certificate a test CA signed: without
    --tls-ca the system's CAs do not trust it (so TLS was spoken, against the system's
    store); with it, ctl gets through to the broker and finds no table there."""
    where = f"127.0.0.1:{tls_broker.tls_port}"
    common = ["ctl", "--table", "t1", "--wait-s", "1"]
    untrusted = _run(*common, "--broker", f"mqtts://{where}", "status", tmp_path=tmp_path)
    assert untrusted.returncode == 1, untrusted.stderr
    assert untrusted.stderr.count("\n") == 1, untrusted.stderr
    assert f"the MQTT broker at {where} cannot be reached: the TLS handshake failed" in (
        untrusted.stderr
    ), untrusted.stderr
    assert "certificate verify failed" in untrusted.stderr, untrusted.stderr
    ca = ["--tls-ca", str(tls_broker.ca_file)]
    for broker in (f"mqtts://{where}", where):
        trusted = _run(*common, *ca, "--broker", broker, "status", tmp_path=tmp_path)
        assert trusted.returncode == 1, trusted.stderr
        assert "no table 't1'" in trusted.stderr, trusted.stderr


def test_the_demo_plays_over_tls_to_an_mqtts_broker(
    tmp_path: Path,
    tls_broker: TlsBroker,  # noqa: F811 (the fixture)
) -> None:
    """``demo --broker mqtts://`` speaks TLS everywhere: its check, tables, people and view
    all trust the --tls-ca given, and a round is played; without it the system's CAs do not
    trust the test CA and the demo says so in one line."""
    where = f"127.0.0.1:{tls_broker.tls_port}"
    fast = ["--plain", "--rounds", "1", "--pace-s", "0.01", "--betting-s", "0.3"]
    untrusted = _run("demo", *fast, "--broker", f"mqtts://{where}", tmp_path=tmp_path)
    assert untrusted.returncode == 1, untrusted.stderr
    errors = [line for line in untrusted.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "certificate verify failed" in errors[0], untrusted.stderr
    assert f"mqtts://{where}" in errors[0], errors
    ca = ["--tls-ca", str(tls_broker.ca_file)]
    played = _run("demo", *fast, *ca, "--broker", f"mqtts://{where}", tmp_path=tmp_path)
    assert played.returncode == 0, played.stderr[-2000:]
    assert f"broker at mqtts://{where}" in played.stdout, played.stdout[:500]
    assert "round_settled" in played.stdout, played.stdout[-2000:]
    plain = _run("demo", *fast, *ca, "--broker", f"mqtt://{where}", tmp_path=tmp_path)
    assert plain.returncode == 1, plain.stderr
    assert "plain MQTT but --tls-ca asks for TLS: use mqtts://" in plain.stderr, plain.stderr
