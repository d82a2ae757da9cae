"""The studio's NATS cluster configuration (systemd/nats/) as nats-server and systemd read it.

``nats-server -t`` tests each node's file, with its paths pointed at a temporary folder,
certificates of a test CA (trustme), the authorisation generated from systemd/nats/studio.toml
and the passwords in the environment as the unit's EnvironmentFile gives them;
``systemd-analyze verify`` checks the unit with a local ExecStart (as
tests/test_systemd_units.py does for livetable@.service).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import trustme

from controller.tools.studio_accounts import load_accounts, nats_authorization
from tests.support.nats import nats_server_binary, passwords_environment

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
NATS_DIR = REPO_ROOT / "systemd" / "nats"
UNIT = NATS_DIR / "nats-server@.service"
INSTALLED_EXEC = "/usr/local/bin/nats-server"
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
    (etc / "livetable-users.conf").write_text(nats_authorization(studio, "studio.toml"))
    environment = passwords_environment({account.name: BCRYPT_HASH for account in studio.accounts})
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


def test_the_configuration_test_fails_without_the_passwords(tmp_path: Path) -> None:
    etc, environment = _installed_tree(tmp_path)
    environment.pop(next(iter(environment)))
    done = _config_test(etc / "n1.conf", environment)
    assert done.returncode != 0
    assert "LIVETABLE_PASSWORD_LIVETABLE_T1" in done.stderr


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


@pytest.mark.skipif(
    SYSTEMD_ANALYZE is None,
    reason="systemd-analyze is not installed (Debian package 'systemd'; scripts/test installs it)",
)
def test_systemd_analyze_verify_finds_nothing_in_the_unit(tmp_path: Path) -> None:
    binary = nats_server_binary()
    assert binary is not None and SYSTEMD_ANALYZE is not None
    text = UNIT.read_text()
    exec_start = f"ExecStart={INSTALLED_EXEC} "
    assert text.count(exec_start) == 1
    units = tmp_path / "units"
    units.mkdir()
    (units / UNIT.name).write_text(text.replace(exec_start, f"ExecStart={binary} "))
    done = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", "--man=no", "./nats-server@n1.service"],
        cwd=units,
        capture_output=True,
        text=True,
        check=False,
    )
    # Unknown keys and bad values are only warnings (exit 0): any output fails the test.
    assert done.returncode == 0 and done.stdout == done.stderr == "", done.stdout + done.stderr
