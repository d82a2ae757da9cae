"""The studio's NATS cluster configuration (systemd/nats/) as nats-server and systemd read it.

``nats-server -t`` tests each node's file, with its paths pointed at a temporary folder,
certificates of a test CA (trustme), the authorisation generated from systemd/nats/studio.toml
(every connection to the auth callout, whose key is a fresh one) and the callout's password
in the environment as the unit's EnvironmentFile gives it; ``systemd-analyze verify`` checks
the node's unit and the auth callout's with a local ExecStart (as
tests/install/test_systemd_units.py does for livetable@.service).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trustme

from controller.tools.studio_accounts import (
    CALLOUT_PASSWORD_VARIABLE,
    load_accounts,
    nats_authorization,
)
from controller.tools.studio_auth_callout import IssuerKey, new_issuer_seed
from tests.support.nats import nats_server_binary, passwords_environment

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
NATS_DIR = REPO_ROOT / "systemd" / "nats"
UNIT = NATS_DIR / "nats-server@.service"
INSTALLED_EXEC = "/usr/local/bin/nats-server"
CALLOUT_UNIT = NATS_DIR / "livetable-auth-callout.service"
INSTALLED_LIVETABLE = "/opt/livetable/.venv/bin/livetable"
NODES = ("n1", "n2", "n3")
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
# A bcrypt hash as `nats server passwd` writes them (of no password anyone uses).
BCRYPT_HASH = "$2a$11$abcdefghijklmnopqrstuu5QnL3iJ2oV0QKvS2ZQeXhX2YxYfU3Ga"


def _installed_tree(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """/etc/nats as the studio installs it, under ``tmp_path``; and the environment."""
    etc, store = tmp_path / "etc" / "nats", tmp_path / "var" / "lib" / "nats"
    (etc / "tls").mkdir(parents=True)
    store.mkdir(parents=True)
    for source in NATS_DIR.glob("*.conf"):
        text = source.read_text()
        text = text.replace("/etc/nats/", f"{etc}/").replace("/var/lib/nats", str(store))
        (etc / source.name).write_text(text)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(etc / "tls" / "ca.crt"))
    hosts = [f"nats{index}.studio.lan" for index in range(1, 4)]
    for name in ("mqtt", "route"):
        certificate = ca.issue_cert(*hosts)
        certificate.cert_chain_pems[0].write_to_path(str(etc / "tls" / f"{name}.crt"))
        certificate.private_key_pem.write_to_path(str(etc / "tls" / f"{name}.key"))
    studio = load_accounts(NATS_DIR / "studio.toml")
    issuer = IssuerKey(new_issuer_seed()).public_key
    (etc / "livetable-users.conf").write_text(nats_authorization(studio, issuer, "studio.toml"))
    # The EnvironmentFile as a studio writes it: the callout's password first, then the
    # accounts' (which only the callout reads).
    environment = {
        CALLOUT_PASSWORD_VARIABLE: "the-callouts-password",
        **passwords_environment({account.name: BCRYPT_HASH for account in studio.accounts}),
    }
    return etc, environment


def _config_test(config: Path, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    binary = nats_server_binary()
    assert binary is not None
    return subprocess.run(
        [binary, "-t", "-c", str(config)],
        env={"PATH": "/usr/bin:/bin", **environment},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("node", NODES)
def test_nats_server_accepts_each_nodes_configuration(tmp_path: Path, node: str) -> None:
    etc, environment = _installed_tree(tmp_path)
    done = _config_test(etc / f"{node}.conf", environment)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "is valid" in done.stdout + done.stderr


def test_the_configuration_test_fails_without_the_callouts_password(tmp_path: Path) -> None:
    etc, environment = _installed_tree(tmp_path)
    environment.pop(CALLOUT_PASSWORD_VARIABLE)
    done = _config_test(etc / "n1.conf", environment)
    assert done.returncode != 0
    assert CALLOUT_PASSWORD_VARIABLE in done.stderr


def test_the_nodes_hand_every_connection_but_the_callouts_to_it(tmp_path: Path) -> None:
    etc, _environment = _installed_tree(tmp_path)
    users = (etc / "livetable-users.conf").read_text()
    assert "auth_callout {" in users
    assert 'auth_users: ["livetable-auth-callout"]' in users
    # No account is a user of the node's own: the callout decides them all.
    assert "LIVETABLE_PASSWORD_" not in users


def test_the_configuration_test_fails_without_a_certificate(tmp_path: Path) -> None:
    etc, environment = _installed_tree(tmp_path)
    (etc / "tls" / "route.key").unlink()
    done = _config_test(etc / "n2.conf", environment)
    assert done.returncode != 0, done.stdout + done.stderr


def test_the_cluster_configuration_says_what_the_studio_relies_on() -> None:
    shared = (NATS_DIR / "livetable-cluster.conf").read_text()
    assert "stream_replicas: 3" in shared
    assert "verify: true" in shared  # routes are mutual TLS
    assert shared.count("nats-route://") == 3
    assert 'include "livetable-users.conf"' in shared
    assert "consumer_replicas" not in shared.split("# nats-server 2.15")[0]
    for node in NODES:
        text = (NATS_DIR / f"{node}.conf").read_text()
        assert f'server_name: "{node}"' in text
        assert 'include "livetable-cluster.conf"' in text


def _verify(units: Path, name: str) -> None:
    assert SYSTEMD_ANALYZE is not None
    done = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", "--man=no", f"./{name}"],
        cwd=units,
        capture_output=True,
        text=True,
        check=False,
    )
    # Unknown keys and bad values are only warnings (exit 0): any output fails the test.
    assert done.returncode == 0 and done.stdout == done.stderr == "", done.stdout + done.stderr


needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None,
    reason="systemd-analyze is not installed (Debian package 'systemd'; scripts/test installs it)",
)


@needs_systemd_analyze
def test_systemd_analyze_verify_finds_nothing_in_the_unit(tmp_path: Path) -> None:
    binary = nats_server_binary()
    assert binary is not None
    text = UNIT.read_text()
    exec_start = f"ExecStart={INSTALLED_EXEC} "
    assert text.count(exec_start) == 1
    units = tmp_path / "units"
    units.mkdir()
    (units / UNIT.name).write_text(text.replace(exec_start, f"ExecStart={binary} "))
    _verify(units, "nats-server@n1.service")


@needs_systemd_analyze
def test_systemd_analyze_verify_finds_nothing_in_the_callouts_unit(tmp_path: Path) -> None:
    livetable = Path(sys.executable).parent / "livetable"
    assert livetable.is_file(), "livetable is not installed in this virtual environment"
    text = CALLOUT_UNIT.read_text()
    exec_start = f"ExecStart={INSTALLED_LIVETABLE} studio auth-callout "
    assert text.count(exec_start) == 1
    units = tmp_path / "units"
    units.mkdir()
    (units / CALLOUT_UNIT.name).write_text(text.replace(INSTALLED_LIVETABLE, str(livetable)))
    _verify(units, CALLOUT_UNIT.name)
