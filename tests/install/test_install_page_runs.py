"""Every shell block of docs/install.md, in the page's order, runs as written and succeeds.

The page is run as root in a mount namespace of its own (``unshare --mount``) where /etc,
/var, /opt, /root and /run are overlays of the real ones: every command sees the machine as
it is (Debian's packages, users, pip's configuration) and every write lands in the test's
folder, so the page's paths stay as written. Each block runs in bash with the page's
settings block before it (its values as written) and is answered on its standard input as
a person would answer it (each password that mosquitto_passwd asks twice and ``read``
once). ``apt-get install`` runs for real: the packages are installed, so it installs
nothing (the test is skipped when one is missing, rather than install it beside an overlay
of dpkg's database).

What the test does instead of the page:

- ``LIVETABLE_REPOSITORY`` (section 1) is a git repository of the working tree's files, as
  the studio's repository would be, with the release's tag (``v`` and pyproject's version),
  and ``LIVETABLE_VERSION`` is that version wherever the page sets it: section 1 builds the
  release wheel from the tag and installs it (so the software under /opt is the wheel's,
  not a checkout), and section 7 installs it again;
- a line whose command is in :data:`NOT_RUN` (the service manager and its journal, which
  no namespace of a test has; the editor) is left out;
- a block after ``<!-- install-run: skip, REASON -->`` is not run (it needs the real shoe or
  camera, which the dry run stands in for);
- where the page starts mosquitto (``systemctl restart mosquitto``), the test starts
  /usr/sbin/mosquitto on the installed files in a network namespace of its own, whose
  loopback also carries the page's ``BROKER_IP``, the address ``BROKER_HOST`` has in
  /etc/hosts (the studio's DNS). From then on the blocks run in that network namespace,
  but for those that install with pip, which need the package index.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
import time
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker.test_shipped_broker_as_installed import (
    EXPECTED_LISTENING,
    MOSQUITTO,
    ShippedBroker,
)
from tests.install.test_broker_tls_walkthrough import Block, answers, doc_settings

REPO_ROOT = Path(__file__).resolve().parents[2]
DOC = REPO_ROOT / "docs" / "install.md"
OVERLAID = ("etc", "var", "opt", "root", "run")
NOT_RUN = ("systemctl", "journalctl", "editor")
PACKAGES = ("python3", "python3-venv", "git", "mosquitto", "mosquitto-clients", "openssl")
SH_BLOCK = re.compile(
    r"(?:<!-- install-(?P<tool>run|test): (?P<mark>[^>]*?) -->\s*)?^(?P<indent>[ \t]*)```sh\n"
    r"(?P<body>.*?)^[ \t]*```",
    re.DOTALL | re.MULTILINE,
)
# Section 1 builds the wheel and installs it with its dependencies, the longest block; the
# rest is quick. Generous: the machine is shared.
BLOCK_TIMEOUT_S = 300.0
START_TIMEOUT_S = 30.0

pytestmark = pytest.mark.slow


def _unavailable() -> str | None:
    if os.geteuid() != 0:
        return "needs root: mount and network namespaces, runuser, apt-get"
    for tool in ("unshare", "nsenter", "ip", "runuser", MOSQUITTO):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    missing = [
        name
        for name in PACKAGES
        if subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True
        ).stdout
        != "install ok installed"
    ]
    if missing:
        return f"Debian packages missing ({' '.join(missing)}): scripts/test installs them"
    probe = subprocess.run(["unshare", "--mount", "--net", "true"], capture_output=True)
    if probe.returncode != 0:
        return "unshare --mount --net fails here"
    return None


def sh_blocks() -> list[tuple[str, str]]:
    """(mark, body) of every ```sh block of the page, in order; mark is the text of an
    ``install-run`` comment just before it, or empty."""
    found = []
    for match in SH_BLOCK.finditer(DOC.read_text()):
        mark = match["mark"] if match["tool"] == "run" else ""
        found.append((mark or "", textwrap.dedent(match["indent"] + match["body"])))
    return found


def without_skipped_lines(body: str) -> str:
    kept = [line for line in body.splitlines() if line.split()[:1] not in ([w] for w in NOT_RUN)]
    return "\n".join(kept) + "\n"


def snapshot_repository(where: Path, tag: str) -> Path:
    """The working tree's files (tracked and new, as git sees them) as one commit, tagged."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if source.is_file():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, where / name)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@localhost", "-C", str(where)]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"], ["tag", tag]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return where


class Namespace:
    """The mount namespace whose /etc, /var, /opt, /root and /run are overlays, held open
    by a process that waits on its standard input."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        mounts = "".join(
            f"mkdir -p {scratch}/{d}.up {scratch}/{d}.work && mount -t overlay overlay "
            f"-o lowerdir=/{d},upperdir={scratch}/{d}.up,workdir={scratch}/{d}.work /{d} && "
            for d in OVERLAID
        )
        self.holder = subprocess.Popen(
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                f"{mounts} echo ready && exec cat",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.holder.stdout is not None
        assert self.holder.stdout.readline() == "ready\n", "the overlays could not be mounted"
        self.broker: subprocess.Popen[bytes] | None = None

    def enter(self, *, in_broker_net: bool = True) -> list[str]:
        command = ["nsenter", f"--mount=/proc/{self.holder.pid}/ns/mnt"]
        if in_broker_net and self.broker is not None:
            command.append(f"--net=/proc/{self.broker.pid}/ns/net")
        return [*command, "--"]

    def run(self, script: str, stdin: str = "", *, in_broker_net: bool = True) -> str:
        # The answers from a file, not a pipe: a program's buffered read of a pipe would
        # take the next program's answers too.
        typed = self.scratch / "typed"
        typed.write_text(stdin)
        with typed.open() as answers_file:
            done = subprocess.run(
                [
                    *self.enter(in_broker_net=in_broker_net),
                    "bash",
                    "-euo",
                    "pipefail",
                    "-c",
                    f"cd\n{script}",
                ],
                stdin=answers_file,
                capture_output=True,
                text=True,
                timeout=BLOCK_TIMEOUT_S,
                check=False,
            )
        typed.unlink()
        assert done.returncode == 0, f"{script}\nexit {done.returncode}:\n{done.stderr}"
        return done.stdout + done.stderr

    def start_broker(self, address: str, log: Path) -> ShippedBroker:
        """``systemctl restart mosquitto``: the unit's /run/mosquitto, then mosquitto on
        /etc/mosquitto/mosquitto.conf as installed, in a network namespace of its own."""
        self.run("install -d -o mosquitto -g mosquitto /run/mosquitto")
        with log.open("wb") as out:
            self.broker = subprocess.Popen(
                [
                    *self.enter(in_broker_net=False),
                    "unshare", "--net", "sh", "-c",
                    'ip link set lo up && ip addr add "$1/32" dev lo && exec "$0" -c "$2"',
                    MOSQUITTO, address, "/etc/mosquitto/mosquitto.conf",
                ],
                stdout=out,
                stderr=out,
            )  # fmt: skip
        broker = ShippedBroker(log.parent, self.broker, log, {})
        deadline = time.monotonic() + START_TIMEOUT_S
        while broker.listening() != EXPECTED_LISTENING:
            assert self.broker.poll() is None, broker.log()
            assert time.monotonic() < deadline, (broker.listening(), broker.log())
            time.sleep(0.1)
        return broker

    def close(self) -> None:
        if self.broker is not None and self.broker.poll() is None:
            self.broker.terminate()
            self.broker.wait(timeout=10)
        assert self.holder.stdin is not None
        self.holder.stdin.close()
        self.holder.wait(timeout=10)


@pytest.fixture
def namespace(tmp_path: Path) -> Iterator[Namespace]:
    held = Namespace(tmp_path / "overlays")
    try:
        yield held
    finally:
        held.close()


needs_namespaces = pytest.mark.skipif(_unavailable() is not None, reason=str(_unavailable()))


def test_the_page_marks_what_it_does_not_run() -> None:
    blocks = sh_blocks()
    marks = [mark for mark, _body in blocks if mark]
    named = ("dry-run", "console", "rolling")
    assert all(mark.startswith("skip, ") or mark in named for mark in marks)
    assert set(named) <= set(marks), marks
    # Not a page of skipped blocks: only the real devices' few.
    assert sum(mark.startswith("skip, ") for mark in marks) <= 3, marks


@needs_namespaces
def test_every_command_of_the_page_runs_as_written(tmp_path: Path, namespace: Namespace) -> None:
    blocks = sh_blocks()
    (settings_block,) = [body for _m, body in blocks if body.startswith("LIVETABLE_FILES=")]
    settings = doc_settings(Block("settings", "sh", settings_block))
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    repository = snapshot_repository(tmp_path / "repository", f"v{version}")
    passwords = {
        name: f"{name}-{uuid.uuid4().hex[:12]}"
        for name in ("livetable-t1", "platform", "alice", "viewer")
    }
    # The studio's DNS: the broker's name, at its address.
    namespace.run(f"echo '{settings['BROKER_IP']} {settings['BROKER_HOST']}' >> /etc/hosts")
    outputs: dict[str, str] = {}
    ran = 0
    for mark, body in blocks:
        if mark.startswith("skip, "):
            continue
        script = without_skipped_lines(body)
        script = re.sub(
            r"(?m)^LIVETABLE_REPOSITORY=\S+", f"LIVETABLE_REPOSITORY={repository}", script
        )
        script = re.sub(r"(?m)^LIVETABLE_VERSION=\S+", f"LIVETABLE_VERSION={version}", script)
        if body is not settings_block and "LIVETABLE_FILES=" not in script:
            script = settings_block + script
        if re.search(r"(?m)^systemctl restart mosquitto", body):
            namespace.start_broker(settings["BROKER_IP"], tmp_path / "mosquitto.log")
        typed = answers(body, settings, passwords)
        output = namespace.run(script, typed, in_broker_net="pip install" not in body)
        ran += 1
        outputs[mark or f"block {ran}"] = output
    assert namespace.broker is not None, "the page never starts mosquitto"
    assert ran >= 20, ran

    # The software is the release wheel's: its version, its modules and its shipped files
    # inside the release's own venv, which /opt/livetable/.venv links to (no checkout under
    # /opt), and the page's link to those files.
    assert f"livetable {version}\n" in outputs["block 1"], outputs["block 1"]
    venv, site_packages, module, link, *releases = namespace.run(
        "readlink /opt/livetable/.venv\n"
        "/opt/livetable/.venv/bin/python -c 'import controller, os, sysconfig;"
        ' print(*(os.path.realpath(p) for p in (sysconfig.get_paths()["purelib"],'
        " controller.__file__)))'\n"
        "readlink /opt/livetable/systemd\nls /opt/livetable/releases\n"
    ).split()
    assert venv == f"venv-{version}", venv
    assert site_packages.startswith(f"/opt/livetable/venv-{version}/"), site_packages
    assert module == f"{site_packages}/controller/__init__.py", module
    assert link == f"{site_packages}/controller/systemd", link
    assert releases == [f"livetable-{version}-py3-none-any.whl"], releases

    # What the page says its dry run and its console print.
    dry_run = outputs["dry-run"]
    assert "table t1 running: ready" in dry_run, dry_run
    assert "livetable/t1/availability online" in dry_run, dry_run
    assert '"shoe_online":true' in dry_run, dry_run
    # The rolling upgrade's check, as a viewer over TLS: the table (offline here, where the
    # page's systemctl lines do not run) with the state it left.
    rolling = outputs["rolling"]
    assert "table t1: offline, baccarat, " in rolling, rolling
    console = outputs["console"]
    assert (
        f"livetable.console: serving http://127.0.0.1:8080 (broker {settings['BROKER_HOST']}:"
        f"{settings['BROKER_PORT']}, MQTT 5, TLS)" in console
    ), console
    checks = "\n".join(outputs.values())
    assert "Verification: OK" in checks and "/etc/livetable/t1.pem: OK" in checks, checks
