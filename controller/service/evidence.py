"""A round's evidence bundle: one zip that proves a round's history without the journal.

``livetable journal export JOURNAL --round ID --bundle FILE.zip`` writes it and
``livetable journal verify --bundle FILE.zip`` checks it, offline, with nothing but the zip
(and, to trust the key, the table's public key). Its members:

``manifest.json``  format, table, epoch, round, the rows (first, last of the round, the
                   signed head's), the key's fingerprint
``round.jsonl``    the round's events, one JSON object a line: each journal row's seq,
                   hash, kind and fields (``event``), with the effects the replay gave it
``chain.jsonl``    every journal row from the round's first to the signed head, whole
                   (seq, kind, body, prev_hash, hash): the hashes can be computed again
``head.json``      the signed bytes themselves (:func:`controller.service.signing.head_message`)
``head.sig``       the raw 64-byte Ed25519 signature of ``head.json``
``key.pub``        the table's public key (PEM)
``README.txt``     how to check it, for a person
``pictures/``      the camera's pictures of the round (``<sha256>.jpg``), each named in the
                   manifest's ``pictures`` with its ``CardPictured`` row of the chain (a
                   picture retention pruned is listed without its file)

The check: every row of ``chain.jsonl`` hashes to its ``hash`` and links to the row before;
the last is the signed head's row and hash; ``head.json`` is the message rebuilt from the
manifest and that row; the signature verifies with the key; every event of
``round.jsonl`` is its row of the chain; every ``CardPictured`` row of the round in the chain
is listed in the manifest, and each picture's file hashes to its row's digest. A changed
event changes its row's hash, which breaks the chain up to the signed head, which the table
signed and nobody else can; a changed picture no longer hashes to the digest its row holds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from controller.kernel.errors import ConfigurationError, JournalError
from controller.service.journal import Journal, canonical_json, row_hash
from controller.service.signing import (
    SignedHead,
    fingerprint,
    head_message,
    public_key_from_pem,
)

BUNDLE_FORMAT: Final = 1
MEMBERS: Final = (
    "manifest.json",
    "round.jsonl",
    "chain.jsonl",
    "head.json",
    "head.sig",
    "key.pub",
    "README.txt",
)
# A bundle is a round and the rows to the next signed head: far below this. A larger member
# is refused before it is read (a zip bomb must not fill the auditor's memory).
MAX_MEMBER_BYTES: Final = 64 << 20

PICTURES_FOLDER: Final = "pictures/"
PICTURE_KIND: Final = "CardPictured"

README: Final = """A livetable round's evidence bundle (format {format}).

Table {table}, journal epoch {epoch}, round {round_id}: journal rows {first}..{last}, vouched
for by the head the table signed at row {head_seq} ({time}) with the key {key}.

Check it:    livetable journal verify --bundle THIS.zip --public-key THE-TABLE.pub

Or by hand: head.json holds the exact bytes the table signed, head.sig the 64-byte Ed25519
signature, key.pub the public key (compare its fingerprint, SHA256 of the raw key in base64,
with the table's):
  openssl pkeyutl -verify -pubin -inkey key.pub -rawin -in head.json -sigfile head.sig
then recompute each row of chain.jsonl: sha256 of "<seq>\\n<kind>\\n<body>\\n<prev_hash>"
(hex) is its hash, and its prev_hash is the hash of the row before; the last row's hash is
the one head.json names. Each picture in pictures/ is named by its SHA-256, which its
CardPictured row of chain.jsonl holds (sha256sum pictures/*).
"""


@dataclass(frozen=True, slots=True)
class BundleReport:
    round_id: int
    table: str
    rows: tuple[int, int]
    head: SignedHead
    key_given: bool

    def line(self) -> str:
        trust = (
            "the key given"
            if self.key_given
            else "the key in the bundle (compare its fingerprint with the table's)"
        )
        return (
            f"round {self.round_id} of table {self.table}: rows {self.rows[0]}..{self.rows[1]} "
            f"signed up to seq {self.head.seq} at {self.head.time} by key {self.head.key}, "
            f"checked with {trust}"
        )


def write_bundle(
    journal: Journal,
    round_id: int,
    path: Path,
    public_keys: dict[str, bytes],
    pictures: Path | None = None,
) -> BundleReport:
    """Write round ``round_id``'s bundle to ``path`` (never over a file), with the first
    signed head at or after the round's last row; ``public_keys``: PEM by fingerprint, one
    of them the key of that head. JournalError when the round is unknown, no signed head
    follows its last row yet, or its key is not given. The caller has verified the
    journal's chain and signatures (against those keys). ``pictures``: the folder of the
    camera's pictures (default beside the journal): the round's go in the bundle, its
    pictures' rows (which follow its cards and its end) in its rows."""
    from controller.service.journaled_table import config_of, export_round
    from controller.service.pictures import PictureStore, picture_rows, pictures_dir

    config = config_of(journal)
    lines = export_round(journal, config, round_id)
    if not lines:
        raise JournalError(f"round {round_id} is not in {journal.path}")
    store = PictureStore(pictures or pictures_dir(journal.path))
    pruned = store.pruned()
    pictured: list[dict[str, Any]] = []
    files: dict[str, bytes] = {}
    for row in picture_rows(journal, round_id):
        digest = str(row.fields.get("sha256"))
        status = store.check(digest, pruned)
        if status == "tampered" or status == "missing":
            raise JournalError(
                f"round {round_id}'s picture of row {row.seq} ({digest}) is {status} in "
                f"{store.folder}: journal verify names every such picture"
            )
        entry: dict[str, Any] = {"row": row.seq, "sha256": digest, "status": status}
        if status == "kept":
            files[digest] = store.read(digest) or b""
            entry["member"] = f"{PICTURES_FOLDER}{digest}.jpg"
        pictured.append(entry)
    first = lines[0]["seq"]
    last = max([lines[-1]["seq"], *(entry["row"] for entry in pictured)])
    heads = sorted(
        (head for head in journal.signed_heads() if head[0] >= last), key=lambda head: head[0]
    )
    if not heads:
        raise JournalError(
            f"round {round_id} ends at row {last} and no signed head covers it yet: the "
            "table signs at every settlement and every minute; export it again later"
        )
    seq, digest, time, key_name, signature = heads[0]
    public_pem = public_keys.get(key_name)
    if public_pem is None:
        raise JournalError(
            f"the head at seq {seq} that covers round {round_id} is signed by key {key_name}: "
            "give its public key with --public-key"
        )
    chain = [
        {
            "seq": entry.seq,
            "kind": entry.kind,
            "body": entry.body,
            "prev_hash": entry.prev_hash,
            "hash": entry.hash,
        }
        for entry in journal.entries(after=first - 1)
        if entry.seq <= seq
    ]
    manifest = {
        "format": BUNDLE_FORMAT,
        "table": config.table_id,
        "epoch": journal.epoch,
        "round": round_id,
        "rows": [first, last],
        "head": {"seq": seq, "hash": digest, "time": time},
        "key": key_name,
        "pictures": pictured,
    }
    readme = README.format(
        format=BUNDLE_FORMAT,
        table=config.table_id,
        epoch=journal.epoch,
        round_id=round_id,
        first=first,
        last=last,
        head_seq=seq,
        time=time,
        key=key_name,
    )
    try:
        with zipfile.ZipFile(path, "x", compression=zipfile.ZIP_DEFLATED) as bundle:
            bundle.writestr("manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
            bundle.writestr("round.jsonl", "".join(canonical_json(line) + "\n" for line in lines))
            bundle.writestr("chain.jsonl", "".join(canonical_json(row) + "\n" for row in chain))
            bundle.writestr(
                "head.json", head_message(config.table_id, journal.epoch, seq, digest, time)
            )
            bundle.writestr("head.sig", base64.b64decode(signature))
            bundle.writestr("key.pub", public_pem)
            bundle.writestr("README.txt", readme)
            for picture_digest, data in files.items():
                # JPEG is compressed already: stored as it is.
                bundle.writestr(
                    f"{PICTURES_FOLDER}{picture_digest}.jpg", data, zipfile.ZIP_STORED
                )
    except FileExistsError as error:
        raise JournalError(f"{path} exists: a bundle is never overwritten") from error
    signed = SignedHead(config.table_id, journal.epoch, seq, digest, time, key_name, signature)
    return BundleReport(round_id, config.table_id, (first, last), signed, True)


def verify_bundle(path: Path, keys: dict[str, Ed25519PublicKey]) -> BundleReport:
    """Check the bundle at ``path``; JournalError, one line, at the first thing wrong.
    ``keys`` (by fingerprint): the auditor's keys; the bundle's key must be one of them.
    Empty: the bundle's own key is used (which proves only that the bundle is whole)."""
    members = _read_members(path)
    try:
        manifest = json.loads(members["manifest.json"])
        table, epoch, round_id = manifest["table"], manifest["epoch"], int(manifest["round"])
        first, last = (int(row) for row in manifest["rows"])
        head = manifest["head"]
        seq, digest, time = int(head["seq"]), str(head["hash"]), str(head["time"])
        key_name = str(manifest["key"])
        chain = [json.loads(line) for line in members["chain.jsonl"].splitlines() if line]
        events = [json.loads(line) for line in members["round.jsonl"].splitlines() if line]
    except (ValueError, KeyError, TypeError) as error:
        raise JournalError(f"{path}: not a livetable evidence bundle ({error})") from error
    if manifest.get("format") != BUNDLE_FORMAT:
        raise JournalError(f"{path}: bundle format {manifest.get('format')!r}, not {BUNDLE_FORMAT}")
    try:
        bundled = public_key_from_pem(members["key.pub"], f"{path} key.pub")
    except ConfigurationError as error:
        raise JournalError(str(error)) from error
    if fingerprint(bundled) != key_name:
        raise JournalError(
            f"{path}: its key.pub is {fingerprint(bundled)}, not the key {key_name} it names"
        )
    if keys and key_name not in keys:
        raise JournalError(
            f"{path}: the head at seq {seq} is signed by key {key_name}, which is not among "
            f"the keys given ({', '.join(sorted(keys))})"
        )
    public_key = keys.get(key_name, bundled)
    _check_chain(path, chain, first, seq, digest)
    message = head_message(table, epoch, seq, digest, time)
    if members["head.json"] != message:
        raise JournalError(f"{path}: head.json is not the head the manifest names (seq {seq})")
    signed = SignedHead(
        table, epoch, seq, digest, time, key_name, base64.b64encode(members["head.sig"]).decode()
    )
    if not signed.check(public_key):
        raise JournalError(
            f"{path}: the signature of the head at seq {seq} does not verify with key {key_name}"
        )
    by_seq = {row["seq"]: row for row in chain}
    for event in events:
        row = by_seq.get(event.get("seq"))
        if (
            row is None
            or not first <= row["seq"] <= last
            or event.get("hash") != row["hash"]
            or event.get("kind") != row["kind"]
            or canonical_json(event.get("event")) != row["body"]
        ):
            raise JournalError(
                f"{path}: the round's event at seq {event.get('seq')} is not that row of the "
                "signed chain"
            )
    if not events:
        raise JournalError(f"{path}: the round has no events")
    _check_pictures(path, manifest.get("pictures", []), chain, round_id, first, last)
    return BundleReport(round_id, str(table), (first, last), signed, bool(keys))


def _check_pictures(
    path: Path, listed: Any, chain: list[dict[str, Any]], round_id: int, first: int, last: int
) -> None:
    """Every ``CardPictured`` row of the round in the chain is listed, and each listed
    picture's file (a pruned one has none) hashes to its row's digest."""
    if not isinstance(listed, list):
        raise JournalError(f"{path}: the manifest's pictures are not a list")
    rows: dict[int, dict[str, Any]] = {}
    for row in chain:
        if row["kind"] == PICTURE_KIND and first <= row["seq"] <= last:
            try:
                fields = json.loads(row["body"])
            except ValueError as error:
                raise JournalError(f"{path}: chain row {row['seq']} is not JSON") from error
            if fields.get("round_id") == round_id:
                rows[row["seq"]] = fields
    try:
        named = {int(entry["row"]): entry for entry in listed}
    except (KeyError, TypeError, ValueError) as error:
        raise JournalError(f"{path}: the manifest's pictures are malformed ({error})") from error
    if set(named) != set(rows):
        left_out = sorted(set(rows) - set(named))
        raise JournalError(
            f"{path}: the manifest lists not the round's pictures: rows "
            f"{left_out or sorted(set(named) - set(rows))} differ from the signed chain's"
        )
    with zipfile.ZipFile(path) as bundle:
        for seq, fields in sorted(rows.items()):
            digest = str(fields.get("sha256"))
            entry = named[seq]
            if entry.get("sha256") != digest:
                raise JournalError(f"{path}: the picture of row {seq} is not the one its row names")
            member = entry.get("member")
            if member is None:
                if entry.get("status") != "pruned":
                    raise JournalError(f"{path}: the picture of row {seq} ({digest}) is missing")
                continue
            if member != f"{PICTURES_FOLDER}{digest}.jpg":
                raise JournalError(f"{path}: the picture of row {seq} is under another name")
            try:
                info = bundle.getinfo(member)
            except KeyError:
                raise JournalError(f"{path}: no {member} in the bundle") from None
            if info.file_size > MAX_MEMBER_BYTES:
                raise JournalError(f"{path}: {member} is larger than a bundle's member may be")
            if hashlib.sha256(bundle.read(member)).hexdigest() != digest:
                raise JournalError(
                    f"{path}: the picture {member} of row {seq} was tampered with: its bytes no "
                    f"longer hash to {digest}"
                )


def _check_chain(
    path: Path, chain: list[dict[str, Any]], first: int, seq: int, digest: str
) -> None:
    expected, prev = first, None
    for row in chain:
        if row.get("seq") != expected:
            raise JournalError(f"{path}: chain row {expected} is missing (found {row.get('seq')})")
        if prev is not None and row.get("prev_hash") != prev:
            raise JournalError(f"{path}: chain row {expected} does not link to row {expected - 1}")
        try:
            computed = row_hash(row["seq"], row["kind"], row["body"], row["prev_hash"])
        except (KeyError, TypeError) as error:
            raise JournalError(f"{path}: chain row {expected} is incomplete") from error
        if computed != row.get("hash"):
            raise JournalError(f"{path}: chain row {expected} was altered: its hash does not match")
        prev, expected = row["hash"], expected + 1
    if expected - 1 != seq or prev != digest:
        raise JournalError(
            f"{path}: the chain ends at row {expected - 1}, not at the signed head's row {seq} "
            "with its hash"
        )


def _read_members(path: Path) -> dict[str, Any]:
    try:
        with zipfile.ZipFile(path) as bundle:
            members: dict[str, Any] = {}
            for name in MEMBERS[:-1]:
                try:
                    info = bundle.getinfo(name)
                except KeyError:
                    raise JournalError(f"{path}: no {name} in the bundle") from None
                if info.file_size > MAX_MEMBER_BYTES:
                    raise JournalError(f"{path}: {name} is larger than a bundle's member may be")
                data = bundle.read(name)
                binary = name in ("head.json", "head.sig", "key.pub")
                members[name] = data if binary else data.decode()
            return members
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError) as error:
        raise JournalError(f"{path}: cannot read the bundle: {error}") from error
