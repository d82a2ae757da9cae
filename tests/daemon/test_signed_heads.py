"""Journal heads signed by the table: an auditor tells the table's journal from a rebuilt one.

``livetable run`` as a subprocess with a signing key made by ``livetable journal keygen``,
its shoe a simulator on a real pty, a real mosquitto, three baccarat rounds played by the
bots; then ``livetable journal verify --public-key`` on the journal as the table left it, on
a copy an attacker rewrote (one card changed, every hash after it computed again, as anyone
holding the file can), on signatures by another key, and a round's evidence bundle checked
from another folder with nothing but the zip and the public key (and by OpenSSL itself).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.service.journal import Journal, row_hash
from controller.service.signing import HeadSigner, SignedHead, load_public_key, load_signing_key
from controller.service.wire import encode
from controller.table.events import ControllerStarted
from controller.tools.cli import main
from simulators.broker import start_broker
from tests.support.api_schema import validate_message
from tests.support.daemon import REPO_ROOT, SimulatedTable
from tests.support.wait import wait_until

LIVETABLE = [sys.executable, "-m", "controller.tools.cli"]
ROUNDS = 3


def livetable(
    *args: str | Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The command line's answer: its exit status and what it printed. In this process
    (the same parser and code, without an interpreter's start each time); with ``cwd``, as
    a process of its own started in that folder."""
    argv = [str(arg) for arg in args]
    if cwd is not None:
        # The repository on the path, whatever the folder.
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        return subprocess.run(
            [*LIVETABLE, *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=60
        )
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def keygen(path: Path) -> str:
    done = livetable("journal", "keygen", path)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("fingerprint ")[1].strip()


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A table that signed its journal through three rounds, stopped: its files and what it
    published last."""
    base = tmp_path_factory.mktemp("signed")
    fingerprint = keygen(base / "t1.key")
    broker = start_broker(base / "broker")
    table = SimulatedTable(
        base / "table", broker.host, broker.port, "baccarat", ROUNDS, signing_key=base / "t1.key"
    )
    try:
        table.daemon.start()
        table.bots.start()
        wait_until(
            lambda: table.bots.done or not table.daemon.alive(), 60, f"{ROUNDS} rounds played"
        )
        assert table.daemon.alive(), table.daemon.log()[-3000:]
        assert not table.bots.errors, table.bots.errors[:5]
        settled = [event for event in table.viewer.events if event["type"] == "round_settled"]
        wait_until(
            lambda: (
                (state := table.viewer.state) is not None
                and state["seq"] == table.viewer.events[-1]["seq"]
                and "signed" in state["journal"]
            ),
            10,
            "the last state, signed",
        )
        state = table.viewer.state
        assert table.daemon.stop() == 0, table.daemon.log()[-3000:]
    finally:
        table.close()
        broker.stop()
    yield {
        "base": base,
        "journal": base / "table" / "t1.journal",
        "key": base / "t1.key",
        "pub": base / "t1.key.pub",
        "fingerprint": fingerprint,
        "state": state,
        "settled": settled,
    }


def rounds_of(journal: Path) -> list[dict[str, Any]]:
    done = livetable("journal", "rounds", journal, "--json")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def signed_seqs(journal: Path) -> list[int]:
    with sqlite3.connect(journal) as db:
        return [row[0] for row in db.execute("SELECT seq FROM signed_heads ORDER BY id")]


def test_keygen_writes_a_private_key_for_its_owner_alone_and_never_overwrites(
    tmp_path: Path,
) -> None:
    fingerprint = keygen(tmp_path / "t9.key")
    assert (tmp_path / "t9.key").stat().st_mode & 0o777 == 0o600
    public_key = load_public_key(tmp_path / "t9.key.pub")
    from controller.service.signing import fingerprint as name_of

    assert fingerprint == name_of(public_key)
    assert fingerprint.startswith("SHA256:") and len(fingerprint) == 7 + 43
    before = (tmp_path / "t9.key").read_bytes()
    again = livetable("journal", "keygen", tmp_path / "t9.key")
    assert again.returncode == 1
    assert len(again.stderr.strip().splitlines()) == 1 and "exists" in again.stderr
    assert (tmp_path / "t9.key").read_bytes() == before


def test_the_table_signs_every_settlement_and_publishes_its_latest_signature(
    played: dict[str, Any],
) -> None:
    journal, fingerprint = played["journal"], played["fingerprint"]
    assert len(played["settled"]) == ROUNDS
    seqs = set(signed_seqs(journal))
    settlements = [summary["rows"][1] for summary in rounds_of(journal)]
    assert len(settlements) == ROUNDS
    # At every settlement, the settlement's own row (after it was journaled).
    assert set(settlements) <= seqs, (settlements, sorted(seqs))
    # The state carries a signature the table's public key verifies, over its own journal.
    state = played["state"]
    signed = state["journal"]["signed"]
    assert signed["key"] == fingerprint
    head = SignedHead(
        state["table"],
        state["epoch"],
        signed["seq"],
        signed["hash"],
        signed["time"],
        signed["key"],
        signed["signature"],
    )
    assert head.check(load_public_key(played["pub"]))
    assert not head.check(load_public_key(_other_key(played)))
    # As the API's schema has it.
    validate_message("livetable/t1/state", encode(state))


def test_a_moving_head_is_signed_again_once_the_interval_passed(tmp_path: Path) -> None:
    """The daemon's minute, shortened: a head that moved is due; one that did not, never."""
    keygen(tmp_path / "t1.key")
    key = load_signing_key(tmp_path / "t1.key")
    with Journal(tmp_path / "t1.journal") as journal:
        journal.append(ControllerStarted(at=1.0))
        signer = HeadSigner(key, journal, "t1", every_s=0.2)
        assert signer.unsigned() and signer.sign() is not None
        assert not signer.unsigned()
        time.sleep(0.3)
        assert not signer.due(), "an unchanged head is not signed again"
        journal.append(ControllerStarted(at=2.0))
        assert signer.due()
        signed = signer.sign()
        assert signed is not None and (signed.seq, signed.hash) == journal.head
        assert not signer.due()
        assert [head[0] for head in journal.signed_heads()] == [1, 2]
        # A signer started later on the same journal knows what was signed.
        assert not HeadSigner(key, journal, "t1").unsigned()


def test_verify_says_up_to_where_the_journal_is_signed(played: dict[str, Any]) -> None:
    done = livetable("journal", "verify", played["journal"], "--public-key", played["pub"])
    assert done.returncode == 0, done.stderr
    last = max(signed_seqs(played["journal"]))
    assert f"signed up to seq {last} at " in done.stdout
    assert f"by key {played['fingerprint']}" in done.stdout
    as_json = livetable(
        "journal", "verify", played["journal"], "--public-key", played["pub"], "--json"
    )
    assert json.loads(as_json.stdout)["signed"]["last"]["seq"] == last


def _copy(played: dict[str, Any], name: str) -> Path:
    copy = played["base"] / name
    shutil.copyfile(played["journal"], copy)
    return copy


def _other_key(played: dict[str, Any]) -> Path:
    other = played["base"] / "other.key"
    if not other.exists():
        keygen(other)
    return played["base"] / "other.key.pub"


def _rewrite_a_card(journal: Path, round_row: int) -> int:
    """What anyone with the file can do: change a card in a row and compute every hash from
    it on again, so that the chain is whole. Returns the row changed."""
    with sqlite3.connect(journal) as db:
        rows = db.execute(
            "SELECT seq, kind, body, prev_hash FROM events WHERE seq >= ? ORDER BY seq",
            (round_row,),
        ).fetchall()
        changed = next(seq for seq, _kind, body, _prev in rows if '"card":"' in body)
        prev_hash = None
        for seq, kind, body, prev in rows:
            if seq < changed:
                continue
            if seq == changed:
                fields = json.loads(body)
                fields["card"] = "AS" if fields["card"] != "AS" else "KD"
                body = json.dumps(fields, sort_keys=True, separators=(",", ":"))
                prev_hash = prev
            digest = row_hash(seq, kind, body, prev_hash)
            db.execute(
                "UPDATE events SET body=?, prev_hash=?, hash=? WHERE seq=?",
                (body, prev_hash, digest, seq),
            )
            prev_hash = digest
    return changed


def test_a_rewritten_journal_with_its_chain_rebuilt_fails_naming_the_row(
    played: dict[str, Any],
) -> None:
    copy = _copy(played, "rewritten.journal")
    second_round = rounds_of(copy)[1]
    changed = _rewrite_a_card(copy, second_round["rows"][0])
    # The chain alone cannot tell: the attack is real.
    assert livetable("journal", "verify", copy).returncode == 0
    done = livetable("journal", "verify", copy, "--public-key", played["pub"])
    assert done.returncode == 1, done.stdout
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1, line
    first_signed_after = min(seq for seq in signed_seqs(copy) if seq >= changed)
    assert f"seq {first_signed_after}" in line, line
    # Nor does it help to write the new hashes beside the signatures too.
    with sqlite3.connect(copy) as db:
        for (seq,) in db.execute("SELECT seq FROM signed_heads").fetchall():
            (digest,) = db.execute("SELECT hash FROM events WHERE seq=?", (seq,)).fetchone()
            db.execute("UPDATE signed_heads SET hash=? WHERE seq=?", (digest, seq))
    again = livetable("journal", "verify", copy, "--public-key", played["pub"])
    assert again.returncode == 1
    assert f"seq {first_signed_after}" in again.stderr and len(again.stderr.splitlines()) == 1


def test_signatures_by_another_key_fail(played: dict[str, Any]) -> None:
    # The table's own journal against a key that is not the table's.
    other = _other_key(played)
    done = livetable("journal", "verify", played["journal"], "--public-key", other)
    assert done.returncode == 1
    first = min(signed_seqs(played["journal"]))
    assert f"seq {first}" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    # A rebuilt journal signed anew by the attacker's own key, checked with the table's.
    copy = _copy(played, "resigned.journal")
    _rewrite_a_card(copy, 1)
    with sqlite3.connect(copy) as db:
        db.execute("DELETE FROM signed_heads")
    with Journal(copy) as journal:
        HeadSigner(load_signing_key(played["base"] / "other.key"), journal, "t1").sign()
    forged = livetable("journal", "verify", copy, "--public-key", played["pub"])
    assert forged.returncode == 1
    assert "not among the keys given" in forged.stderr, forged.stderr
    # Both keys given (a key rotated): the one the attacker signed with is now trusted.
    both = livetable(
        "journal", "verify", copy, "--public-key", played["pub"], "--public-key", other
    )
    assert both.returncode == 0, both.stderr


def test_a_round_bundle_verifies_offline_with_only_the_zip_and_the_public_key(
    played: dict[str, Any], tmp_path: Path
) -> None:
    bundle = played["base"] / "round-2.zip"
    made = livetable(
        "journal", "export", played["journal"], "--round", "2", "--bundle", bundle,
        "--public-key", played["pub"],
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    elsewhere = tmp_path / "auditor"
    elsewhere.mkdir()
    shutil.copyfile(bundle, elsewhere / "round-2.zip")
    shutil.copyfile(played["pub"], elsewhere / "t1.pub")
    done = livetable(
        "journal", "verify", "--bundle", "round-2.zip", "--public-key", "t1.pub", cwd=elsewhere
    )
    assert done.returncode == 0, done.stderr
    assert "round 2 of table t1" in done.stdout and played["fingerprint"] in done.stdout
    # Without the key, the bundle's own (whose fingerprint it prints to compare).
    alone = livetable("journal", "verify", "--bundle", "round-2.zip", cwd=elsewhere)
    assert alone.returncode == 0 and played["fingerprint"] in alone.stdout
    # Another key than the table's: refused.
    shutil.copyfile(_other_key(played), elsewhere / "other.pub")
    wrong = livetable(
        "journal", "verify", "--bundle", "round-2.zip", "--public-key", "other.pub", cwd=elsewhere
    )
    assert wrong.returncode == 1 and "not among the keys given" in wrong.stderr
    # Any Ed25519 tool checks the signature: OpenSSL on the bundle's own members.
    with zipfile.ZipFile(bundle) as opened:
        opened.extractall(elsewhere / "members")
    members = elsewhere / "members"
    openssl = subprocess.run(
        ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", "t1.pub", "-rawin",
         "-in", members / "head.json", "-sigfile", members / "head.sig"],
        capture_output=True, text=True, cwd=elsewhere, timeout=30,
    )  # fmt: skip
    assert openssl.returncode == 0 and "Signature Verified Successfully" in openssl.stdout


def test_a_bundle_with_one_event_changed_fails(played: dict[str, Any], tmp_path: Path) -> None:
    bundle = tmp_path / "round-1.zip"
    made = livetable(
        "journal", "export", played["journal"], "--round", "1", "--bundle", bundle,
        "--public-key", played["pub"],
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    with zipfile.ZipFile(bundle) as opened:
        members = {name: opened.read(name) for name in opened.namelist()}
    chain = [json.loads(line) for line in members["chain.jsonl"].decode().splitlines()]
    # The attacker changes a card and computes the bundle's hashes again, up to the head.
    index = next(i for i, row in enumerate(chain) if '"card":"' in row["body"])
    fields = json.loads(chain[index]["body"])
    fields["card"] = "AS" if fields["card"] != "AS" else "KD"
    chain[index]["body"] = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    for i in range(index, len(chain)):
        if i > index:
            chain[i]["prev_hash"] = chain[i - 1]["hash"]
        row = chain[i]
        row["hash"] = row_hash(row["seq"], row["kind"], row["body"], row["prev_hash"])
    members["chain.jsonl"] = "".join(json.dumps(row) + "\n" for row in chain).encode()
    forged = tmp_path / "forged.zip"
    with zipfile.ZipFile(forged, "w") as out:
        for name, data in members.items():
            out.writestr(name, data)
    done = livetable("journal", "verify", "--bundle", forged, "--public-key", played["pub"])
    assert done.returncode == 1, done.stdout
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        pytest.param("missing", "No such file", id="missing"),
        pytest.param("group-readable", "open to its group or others", id="group-readable"),
        pytest.param("public-key", "not a PEM private key", id="not-a-private-key"),
        pytest.param("rsa", "not Ed25519", id="rsa"),
    ],
)
def test_a_bad_signing_key_stops_the_start_in_one_line(
    tmp_path: Path, setup: str, words: str
) -> None:
    from simulators.table_config import write_table_config

    key = tmp_path / "t1.key"
    if setup != "missing":
        keygen(key)
    if setup == "group-readable":
        key.chmod(0o640)
    elif setup == "public-key":
        key.unlink()
        shutil.copyfile(tmp_path / "t1.key.pub", key)
        key.chmod(0o600)
    elif setup == "rsa":
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        pem = rsa.generate_private_key(65537, 2048).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        key.write_bytes(pem)
    config = write_table_config(
        tmp_path / "t1.toml",
        table_id="t1",
        game="baccarat",
        shoe_port=tmp_path / "no-shoe",
        broker_port=1,
        signing_key="t1.key",  # relative: beside the file, as journal_path is
    )
    # A process of its own: `run` takes over SIGTERM and SIGINT.
    done = livetable("run", "--config", config, cwd=tmp_path)
    assert done.returncode == 1
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert words in line and "signing_key" in line and str(key) in line, line
    assert not (tmp_path / "t1.journal").exists(), "the journal was touched"


def test_signing_key_is_no_part_of_what_binds_the_journal(tmp_path: Path) -> None:
    """A key may be rotated under a living journal: the table's binding never holds it."""
    from controller.service.config import load_config
    from simulators.table_config import write_table_config

    config = load_config(
        write_table_config(
            tmp_path / "t1.toml",
            table_id="t1",
            game="baccarat",
            shoe_port="/dev/null",
            broker_port=1883,
            signing_key="keys/t1.key",
        )
    )
    assert config.signing_key == tmp_path / "keys" / "t1.key"
    assert "t1.key" not in repr(config.table)


def test_the_daemon_signs_at_start_while_the_head_moves_and_at_stop(
    tmp_path: Path, mqtt_broker: tuple[str, int]
) -> None:
    """The daemon's own loop (its minute shortened): a start's head is signed before the
    table says it runs, a moved head again once the interval passed, the last one at stop."""
    import threading

    from controller.service.config import LivetableConfig, MqttConfig
    from controller.service.daemon import TableDaemon
    from controller.table.config import TableConfig
    from controller.table.events import SupervisorCommanded

    keygen(tmp_path / "t1.key")
    host, port = mqtt_broker
    config = LivetableConfig(
        table=TableConfig(table_id="t1", game="baccarat", journal_path=tmp_path / "t1.journal"),
        mqtt=MqttConfig(host=host, port=port),
        signing_key=tmp_path / "t1.key",
    )
    daemon = TableDaemon(config, shoe=False)
    assert daemon.signer is not None
    daemon.signer.every_s = 0.3
    stop, seen, errors = threading.Event(), [], []

    def signed() -> dict[str, Any] | None:
        _version, state = daemon.publications.state_snapshot()
        return None if state is None else state["journal"].get("signed")

    def drive() -> None:
        try:
            first = wait_until(signed, 20, "the start's signed head")
            seen.append(first)
            daemon.runtime.submit(
                SupervisorCommanded("alice/1", "new_shoe", "alice", "supervisor", time.time())
            )
            moved = wait_until(
                lambda: (s := signed()) is not None and s["seq"] > first["seq"] and s,
                20,
                "the moved head signed again",
            )
            seen.append(moved)
        except BaseException as error:  # the main thread fails the test with it
            errors.append(error)
        finally:
            stop.set()

    driver = threading.Thread(target=drive)
    driver.start()
    assert daemon.run(stop) == 0
    driver.join(10)
    assert not errors, errors
    first, moved = seen
    with Journal(tmp_path / "t1.journal", read_only=True) as journal:
        head = journal.head
        heads = journal.signed_heads()
    assert first["seq"] == heads[0][0]
    assert moved["seq"] in [h[0] for h in heads]
    # Signed by the interval (no settlement here), not sooner: 0.3 s after the start's.
    assert seconds(moved["time"]) - seconds(first["time"]) >= 0.3
    # The last row (the stop's, if one) is signed as the journal closes.
    assert heads[-1][0] == head[0], (heads[-1], head)
    verified = livetable("journal", "verify", tmp_path / "t1.journal", "--public-key",
                         tmp_path / "t1.key.pub")  # fmt: skip
    assert verified.returncode == 0, verified.stderr
    assert f"signed up to seq {head[0]} " in verified.stdout
    assert "no row after it" in verified.stdout


def seconds(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@pytest.mark.parametrize(
    ("argv", "cause"),
    [
        (["journal", "verify"], "the following arguments are required: JOURNAL"),
        (["journal", "verify", "{tmp}/j", "--bundle", "{tmp}/b.zip"], "give a JOURNAL or"),
        (["journal", "verify", "--bundle", "{tmp}/b.zip", "--expect-head", "1:" + "0" * 64],
         "--expect-head is a journal's"),
        (["journal", "export", "{tmp}/j", "--round", "1", "--bundle", "{tmp}/b.zip"],
         "--bundle needs the table's --public-key"),
    ],
)  # fmt: skip
def test_a_bundle_without_what_it_needs_is_a_usage_error(
    argv: list[str], cause: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from controller.tools.cli import main

    with pytest.raises(SystemExit) as exit_:
        main([arg.replace("{tmp}", str(tmp_path)) for arg in argv])
    assert exit_.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.split(": error: ", 1)[1].startswith(cause), last
    assert not (tmp_path / "b.zip").exists()


def test_a_rotated_key_signs_from_its_start_on_and_verify_takes_every_key(
    tmp_path: Path,
) -> None:
    """A new key from a point on: the old signatures keep naming the old key."""
    old, new = keygen(tmp_path / "old.key"), keygen(tmp_path / "new.key")
    path = tmp_path / "t1.journal"
    from controller.service.journaled_table import JournaledTable
    from controller.table.config import TableConfig

    # A journal bound to its table, as the daemon makes one (verify reads the table's id).
    config = TableConfig(table_id="t1", game="baccarat", journal_path=path)
    table, _effects = JournaledTable.open(config, at=1.0)
    try:
        journal = table.journal
        HeadSigner(load_signing_key(tmp_path / "old.key"), journal, "t1").sign()
        journal.append(ControllerStarted(at=2.0))
        rotated = HeadSigner(load_signing_key(tmp_path / "new.key"), journal, "t1")
        # The head the old key signed is not this key's: the first start signs it anew.
        assert rotated.unsigned()
        rotated.sign()
    finally:
        journal.close()
    with Journal(path, read_only=True) as reread:
        assert [head[3] for head in reread.signed_heads()] == [old, new]
    only_new = livetable("journal", "verify", path, "--public-key", tmp_path / "new.key.pub")
    assert only_new.returncode == 1 and f"signed by key {old}" in only_new.stderr
    both = livetable(
        "journal", "verify", path,
        "--public-key", tmp_path / "old.key.pub", "--public-key", tmp_path / "new.key.pub",
    )  # fmt: skip
    assert both.returncode == 0, both.stderr
    assert f"by key {new}" in both.stdout and "2 signed head(s) checked" in both.stdout


def test_signatures_deleted_after_a_rewrite_show_as_settled_rounds_left_unsigned(
    played: dict[str, Any],
) -> None:
    """The signatures live in the file: an attacker may delete those after the change. The
    rounds settled in the unsigned tail, which the table signs at once, give it away."""
    copy = _copy(played, "pruned.journal")
    rounds = rounds_of(copy)
    changed = _rewrite_a_card(copy, rounds[1]["rows"][0])
    with sqlite3.connect(copy) as db:
        db.execute("DELETE FROM signed_heads WHERE seq >= ?", (changed,))
    done = livetable("journal", "verify", copy, "--public-key", played["pub"])
    assert done.returncode == 0, done.stderr  # what is left is signed and intact
    settled_after = [summary["rows"][1] for summary in rounds[1:]]
    assert f"warning: {len(settled_after)} round(s) settled after the last signed" in done.stdout
    assert f"(rows {', '.join(map(str, settled_after))})" in done.stdout
    # The table's own journal has none.
    intact = livetable("journal", "verify", played["journal"], "--public-key", played["pub"])
    assert "warning" not in intact.stdout


def test_the_api_guide_checks_a_published_signature_as_written(
    played: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/mqtt-api.md's snippet, run on the state the table published, beside its key."""
    import re

    from cryptography.exceptions import InvalidSignature

    guide = (REPO_ROOT / "docs" / "mqtt-api.md").read_text()
    section = guide.split("### Checking a signed head", 1)[1].split("\n## ", 1)[0]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    monkeypatch.chdir(played["base"])  # where t1.key.pub lies, as the snippet opens it
    exec(snippet, {"state": played["state"]})  # raises unless the signature verifies
    forged = json.loads(json.dumps(played["state"]))
    forged["journal"]["signed"]["seq"] -= 1
    with pytest.raises(InvalidSignature):
        exec(snippet, {"state": forged})
