"""Journal heads signed by the table: who wrote the journal, not only in what order.

The journal's hash chain (:mod:`controller.service.journal`) shows that no row was changed,
removed or reordered *since the hashes were computed*; whoever holds the file can change a
row and compute every hash after it again. A table with a signing key (``[table]
signing_key``, an Ed25519 private key made by ``livetable journal keygen``) signs its head,
the last row's number and hash, and keeps each signature in the journal file; anyone with
the public key can then tell the table's journal from a rebuilt one: a rebuilt chain has
other hashes, which the signatures do not cover, and a forger without the private key cannot
sign them.

**What is signed** (format 1): the bytes of this JSON object, with its keys sorted, no
spaces, every non-ASCII character escaped (``\\uXXXX``), and no line break at the end::

    {"epoch":"<journal epoch>","hash":"<row hash, 64 lower-case hex digits>",
     "seq":<row number>,"table":"<table id>","time":"<UTC, YYYY-MM-DDTHH:MM:SS.mmmZ>",
     "type":"livetable.journal.head","v":1}

(one line; broken here for the page). ``epoch`` is the journal's id (the state's ``epoch``),
``time`` when the table signed, to the millisecond. The signature is Ed25519 (RFC 8032) over
those bytes, written in base64 (standard alphabet, with padding). A key is named by its
**fingerprint**: ``SHA256:`` and the base64 of the SHA-256 of the raw 32-byte public key,
without padding (as ``ssh-keygen -l`` names keys). Any Ed25519 tool checks one, e.g.
``openssl pkeyutl -verify -pubin -inkey t1.key.pub -rawin -in head.json -sigfile head.sig``.
A new format is a new ``v``.

A signed head vouches for every row up to it (the chain links each row to the one before).
The rows after the last one are not vouched for yet: the daemon signs at every round's
settlement and, while the head moves, at least every :data:`SIGN_EVERY_S` seconds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import time as time_module
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from controller.kernel.errors import ConfigurationError, JournalError
from controller.service.journal import Journal

FORMAT: Final = 1
HEAD_TYPE: Final = "livetable.journal.head"
# The longest a moving head stays unsigned while the table runs: a platform that keeps the
# published head sees a signature at most this old beside it.
SIGN_EVERY_S: Final = 60.0


def fingerprint(public_key: Ed25519PublicKey) -> str:
    """``SHA256:`` + base64 (no padding) of the SHA-256 of the raw public key, as ssh does."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    digest = base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"


def time_text(at: float) -> str:
    """``at`` (seconds since 1970, UTC) as the signed text: to the millisecond, ``Z``."""
    millis = round(at * 1000)
    seconds, ms = divmod(millis, 1000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{ms:03d}Z"


def head_message(table: str, epoch: str, seq: int, digest: str, time: str) -> bytes:
    """The bytes a head's signature covers (format 1, see the module's docstring)."""
    document = {
        "epoch": epoch,
        "hash": digest,
        "seq": seq,
        "table": table,
        "time": time,
        "type": HEAD_TYPE,
        "v": FORMAT,
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


@dataclass(frozen=True, slots=True)
class SignedHead:
    """One signed head: what was signed, by which key (its fingerprint), the signature."""

    table: str
    epoch: str
    seq: int
    hash: str
    time: str
    key: str
    signature: str
    """Base64 of the 64-byte Ed25519 signature."""

    def message(self) -> bytes:
        return head_message(self.table, self.epoch, self.seq, self.hash, self.time)

    def published(self) -> dict[str, Any]:
        """As the state publishes it, ``journal.signed`` (table and epoch are the state's)."""
        return {
            "seq": self.seq,
            "hash": self.hash,
            "time": self.time,
            "key": self.key,
            "signature": self.signature,
        }

    def check(self, public_key: Ed25519PublicKey) -> bool:
        """Whether the signature is ``public_key``'s over :meth:`message`."""
        try:
            public_key.verify(base64.b64decode(self.signature, validate=True), self.message())
        except (InvalidSignature, ValueError):
            return False
        return True


# -- keys -------------------------------------------------------------------------------------


def generate_key_pair(path: Path) -> str:
    """Write a new Ed25519 key: ``path`` (private, PEM PKCS8, mode 0600, never over an
    existing file) and ``path.pub`` (public, PEM); return its fingerprint."""
    path = Path(path)
    public_path = public_key_path(path)
    for target in (path, public_path):
        if target.exists() or target.is_symlink():
            raise ConfigurationError(f"{target} exists: a key is never overwritten")
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    # O_EXCL: a file that appeared since the check above is not overwritten either; 0600
    # from the start, so the key is never readable by others, not even for a moment.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(private_pem)
        out.flush()
        os.fsync(out.fileno())
    fd = os.open(public_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(public_pem)
    return fingerprint(key.public_key())


def public_key_path(path: Path) -> Path:
    return Path(path).with_name(Path(path).name + ".pub")


def load_signing_key(path: Path) -> Ed25519PrivateKey:
    """The table's private key at ``path``; ConfigurationError, one line, when it is missing,
    unreadable, open to the group or others, or not an unencrypted Ed25519 PEM key."""
    what = f"[table] signing_key {path}"
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        missing = not Path(path).exists()
        hint = f" (make one with: livetable journal keygen {path})" if missing else ""
        raise ConfigurationError(f"{what}: {error.strerror or error}{hint}") from error
    if not stat.S_ISREG(mode):
        raise ConfigurationError(f"{what} is not a file")
    if mode & 0o077:
        raise ConfigurationError(
            f"{what} is open to its group or others (mode {stat.S_IMODE(mode):04o}): the "
            f"private key must be its owner's only (chmod 600 {path})"
        )
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ConfigurationError(f"{what} cannot be read: {error.strerror or error}") from error
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError as error:
        raise ConfigurationError(f"{what} is encrypted: the daemon needs it unencrypted") from error
    except (ValueError, UnsupportedAlgorithm) as error:
        raise ConfigurationError(f"{what} is not a PEM private key") from error
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigurationError(
            f"{what} holds a {type(key).__name__.removeprefix('_')} key, not Ed25519 "
            f"(make one with: livetable journal keygen PATH)"
        )
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    """An Ed25519 public key (PEM) from ``path``; ConfigurationError in one line otherwise."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ConfigurationError(f"public key {path}: {error.strerror or error}") from error
    return public_key_from_pem(data, f"public key {path}")


def public_key_from_pem(data: bytes, what: str) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as error:
        raise ConfigurationError(f"{what} is not a PEM public key") from error
    if not isinstance(key, Ed25519PublicKey):
        raise ConfigurationError(f"{what} is not an Ed25519 key")
    return key


def keys_by_fingerprint(paths: Iterable[Path]) -> dict[str, Ed25519PublicKey]:
    return {fingerprint(key): key for key in map(load_public_key, paths)}


# -- signing (the daemon) -----------------------------------------------------------------------


class HeadSigner:
    """Signs a journal's head with the table's key and keeps each signature in the journal.

    Used on the table's thread only (it writes through the journal's own connection). The
    state machine never sees it: the daemon signs after the rows are journaled.
    """

    def __init__(
        self,
        key: Ed25519PrivateKey,
        journal: Journal,
        table_id: str,
        clock: Callable[[], float] = time_module.time,
        every_s: float = SIGN_EVERY_S,
    ) -> None:
        self._key = key
        self.journal = journal
        self.table_id = table_id
        self.clock = clock
        self.every_s = every_s
        self.fingerprint = fingerprint(key.public_key())
        self.latest: SignedHead | None = None
        self._signed_at = time_module.monotonic()
        stored = journal.signed_heads()
        if stored:
            seq, digest, at, key_name, signature = stored[-1]
            self.latest = SignedHead(table_id, journal.epoch, seq, digest, at, key_name, signature)

    def sign(self) -> SignedHead | None:
        """Sign the journal's head now and keep it (None when the journal has no row)."""
        seq, digest = self.journal.head
        if seq == 0:
            return None
        time = time_text(self.clock())
        message = head_message(self.table_id, self.journal.epoch, seq, digest, time)
        signature = base64.b64encode(self._key.sign(message)).decode()
        self.journal.add_signed_head(seq, digest, time, self.fingerprint, signature)
        self.latest = SignedHead(
            self.table_id, self.journal.epoch, seq, digest, time, self.fingerprint, signature
        )
        self._signed_at = time_module.monotonic()
        return self.latest

    def unsigned(self) -> bool:
        """Whether the journal's head is newer than the last head this key signed."""
        latest = self.latest
        return self.journal.head[0] > 0 and (
            latest is None
            or latest.key != self.fingerprint
            or (latest.seq, latest.hash) != self.journal.head
        )

    def due(self) -> bool:
        """Whether the head moved and the last signature is :attr:`every_s` old."""
        return self.unsigned() and time_module.monotonic() - self._signed_at >= self.every_s


# -- checking (the auditor) ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SignatureReport:
    """What the signatures of a journal vouch for."""

    rows: int
    heads: int
    """Signed heads checked."""
    last: SignedHead | None
    """The signed head furthest along (None: nothing signed)."""

    def line(self) -> str:
        if self.last is None:
            return f"not signed: rows 1..{self.rows} unsigned"
        text = (
            f"signed up to seq {self.last.seq} at {self.last.time} by key {self.last.key} "
            f"({self.heads} signed head(s) checked)"
        )
        if self.rows > self.last.seq:
            return f"{text}; rows {self.last.seq + 1}..{self.rows} after it unsigned"
        return f"{text}; no row after it"

    def to_dict(self) -> dict[str, Any]:
        return {
            "heads": self.heads,
            "last": None if self.last is None else self.last.published(),
            "unsigned_after": None if self.last is None else self.rows - self.last.seq,
        }


def check_signed_heads(
    table: str,
    epoch: str,
    heads: Iterable[tuple[int, str, str, str, str]],
    hash_at: Callable[[int], str | None],
    last_seq: int,
    keys: Mapping[str, Ed25519PublicKey],
) -> SignatureReport:
    """Check every signed head against the chain's own hashes and the trusted ``keys``
    (by fingerprint); JournalError, one line naming the row, at the first that fails.

    ``hash_at(seq)`` is the chain's hash of row ``seq``, which the caller has verified: a
    signature is checked over the message rebuilt from it, never from the hash stored beside
    the signature, so a rebuilt chain fails at the first signed head after its change.
    """
    count, last, good_before = 0, None, 0
    for seq, stored_hash, at, key_name, signature in sorted(heads, key=lambda head: head[0]):
        public_key = keys.get(key_name)
        if public_key is None:
            given = ", ".join(sorted(keys)) or "none"
            raise JournalError(
                f"the head at seq {seq} is signed by key {key_name}, which is not among the "
                f"keys given ({given}): not the table's signature"
            )
        if seq > last_seq:
            raise JournalError(
                f"a head at seq {seq} was signed ({at}) but the journal ends at row "
                f"{last_seq}: rows {last_seq + 1}..{seq} were cut off"
            )
        digest = hash_at(seq) or ""
        head = SignedHead(table, epoch, seq, digest, at, key_name, signature)
        if not head.check(public_key):
            changed = f"rows {good_before + 1}..{seq}" if good_before + 1 < seq else f"row {seq}"
            why = (
                f"the chain's hash of row {seq} is not the one signed ({stored_hash})"
                if stored_hash != digest
                else f"the signature does not match the chain's row {seq}"
            )
            raise JournalError(
                f"the signed head at seq {seq} (key {key_name}, {at}) fails: {why}; {changed} "
                f"changed after they were signed"
            )
        count += 1
        good_before = seq
        if last is None or seq >= last.seq:
            last = head
    return SignatureReport(last_seq, count, last)


def check_journal(journal: Journal, keys: Mapping[str, Ed25519PublicKey]) -> SignatureReport:
    """Every signed head of ``journal`` (whose chain the caller verified) against ``keys``."""
    from controller.service.journaled_table import config_of

    return check_signed_heads(
        config_of(journal).table_id,
        journal.epoch,
        journal.signed_heads(),
        journal.hash_at,
        journal.last_seq,
        keys,
    )
