"""Who is signed in to the console: sessions, their CSRF tokens, the sign-in throttle, and
the one broker connection per account that an account's sessions share.

Pure bookkeeping, no I/O and no sleeping: every time comes from an injected clock
(``time.monotonic`` by default), so the tests move time by hand.

- :class:`SignInThrottle`: after ``n`` failed sign-ins for an account name, the next is
  refused until :func:`sign_in_delay` (1, 2, 4, 8, 16 ... s, at most 300) has passed since
  the last failure. Per name, not per address: a guesser who changes address still waits,
  and a success resets the name.
- :class:`DeviceCookies`: a browser that signed in as a name before carries a device cookie
  for that name (signed with this process's key); its attempts are throttled by their own
  failures, not by the name's, so a guesser who keeps a name's delay at its cap never
  locks its real owner out (the "device cookie" defence against lockout, OWASP's
  "Slow Down Online Guessing Attacks with Device Cookies").
- :class:`SessionStore`: sessions by a random 256-bit id, each with its own CSRF token,
  ended after ``idle_timeout_s`` without a request (never a kiosk's, :data:`KIOSK_ROLE`). A
  session ended so may go on as a *wall* session under the same id
  (:meth:`SessionStore.keep_as_wall`): the page keeps watching, read-only, on the console's
  own viewer account, for as long as it is open.
- :class:`AccountLinks`: one client (a ``StudioClient``) per account name, shared by that
  account's sessions and handed back for closing when the last of them ends (the shipped
  broker takes one connection per account). A second sign-in of a name that is already
  connected is checked against a keyed digest of the password the connection was made
  with: the password itself stays inside the client, in memory, for the session's life.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Generic, TypeVar

Clock = Callable[[], float]

MAX_SIGN_IN_DELAY_S: Final = 300.0
# Names remembered by the throttle: a flood of made-up names forgets those with the fewest
# failures, never grows the console's memory without bound.
MAX_THROTTLED_NAMES: Final = 10_000
# The role of a kiosk's account (a dealer station's screen): its session never ends for
# being idle; it ends when signed out, or when the console stops.
KIOSK_ROLE: Final = "dealer"
# 256 bits, URL-safe: a session id or a CSRF token nobody guesses.
TOKEN_BYTES: Final = 32


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def tokens_match(expected: str | None, given: str | None) -> bool:
    """Whether ``given`` is ``expected``, compared in constant time (no timing oracle)."""
    if not expected or not given:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


def sign_in_delay(failures: int) -> float:
    """How long after the last of ``failures`` failed sign-ins the next may be tried."""
    if failures <= 0:
        return 0.0
    return min(2.0 ** min(failures - 1, 16), MAX_SIGN_IN_DELAY_S)


@dataclass
class _Failures:
    count: int
    last_at: float


class SignInThrottle:
    """The growing delay between failed sign-ins, per account name."""

    def __init__(self, clock: Clock = time.monotonic, max_names: int = MAX_THROTTLED_NAMES):
        self._clock = clock
        self._max_names = max_names
        self._names: OrderedDict[str, _Failures] = OrderedDict()

    def failures(self, name: str) -> int:
        entry = self._names.get(name)
        return 0 if entry is None else entry.count

    def retry_after(self, name: str) -> float:
        """Seconds before ``name`` may try again; 0 when it may now."""
        entry = self._names.get(name)
        if entry is None:
            return 0.0
        return max(0.0, entry.last_at + sign_in_delay(entry.count) - self._clock())

    def failed(self, name: str) -> float:
        """Count a failed sign-in of ``name``; the delay it now has to wait."""
        entry = self._names.pop(name, None)
        count = 1 if entry is None else entry.count + 1
        self._names[name] = _Failures(count, self._clock())
        while len(self._names) > self._max_names:
            # The name with the fewest failures goes (the oldest of those): a flood of
            # made-up names must never push out, and so reset, a name under attack.
            fewest = min(self._names, key=lambda known: self._names[known].count)
            del self._names[fewest]
        return sign_in_delay(count)

    def succeeded(self, name: str) -> None:
        self._names.pop(name, None)


def device_cookie_name(account: str) -> str:
    """The device cookie of ``account``: one per name, so a desk shared by two supervisors
    keeps both (the name is hashed: a cookie's name takes no arbitrary text)."""
    return "livetable_device_" + hashlib.sha256(account.encode()).hexdigest()[:16]


class DeviceCookies:
    """Device cookies: ``<nonce>.<HMAC of the name and the nonce>``, valid in this process
    only (a restart forgets the throttle too)."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(TOKEN_BYTES)

    def _signature(self, account: str, nonce: str) -> str:
        message = account.encode() + b"\0" + nonce.encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def issue(self, account: str) -> str:
        nonce = new_token()
        return f"{nonce}.{self._signature(account, nonce)}"

    def device(self, account: str, value: str | None) -> str | None:
        """The device (its nonce) when ``value`` is a device cookie issued for ``account``,
        else None."""
        if not value or len(value) > 200:
            return None
        nonce, _, signature = value.partition(".")
        if not nonce or not tokens_match(self._signature(account, nonce), signature):
            return None
        return nonce


@dataclass
class Session:
    id: str
    account: str
    role: str
    csrf: str
    created_at: float
    last_seen: float
    # Its person's session ended (idle): the page watches on the console's viewer account,
    # and may not act until its person signs in again.
    wall: bool = False


class SessionStore:
    """Sessions by id; one that saw no request for ``idle_timeout_s`` is gone."""

    def __init__(
        self,
        idle_timeout_s: float,
        clock: Clock = time.monotonic,
        token: Callable[[], str] = new_token,
    ) -> None:
        self.idle_timeout_s = idle_timeout_s
        self._clock = clock
        self._token = token
        self._sessions: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, account: str, role: str) -> Session:
        now = self._clock()
        session = Session(self._token(), account, role, self._token(), now, now)
        self._sessions[session.id] = session
        return session

    def _expired(self, session: Session, now: float) -> bool:
        if session.role == KIOSK_ROLE:
            return False  # a kiosk nobody touches is the point: the dealer's screen
        return now - session.last_seen >= self.idle_timeout_s

    def get(self, session_id: str | None, *, touch: bool = True) -> Session | None:
        """The live session ``session_id``, None if unknown or idle too long (an idle one
        stays in the store, unusable, until :meth:`expire` hands it over to be ended:
        whoever ends it also lets its broker connection go). ``touch``: this is a
        request, so its idle time starts again."""
        if not session_id:
            return None
        session = self._sessions.get(session_id)
        if session is None:
            return None
        now = self._clock()
        if self._expired(session, now):
            return None
        if touch:
            session.last_seen = now
        return session

    def end(self, session_id: str) -> Session | None:
        return self._sessions.pop(session_id, None)

    def expire(self, watching: Callable[[Session], bool] = lambda _session: False) -> list[Session]:
        """End every session idle too long; the ones ended. A wall session for which
        ``watching`` holds (its page is open) is kept, its idle time started again."""
        now = self._clock()
        gone = []
        for session in list(self._sessions.values()):
            if session.wall and watching(session):
                session.last_seen = now
            elif self._expired(session, now):
                gone.append(session)
                del self._sessions[session.id]
        return gone

    def keep_as_wall(self, ended: Session, account: str) -> Session:
        """Session ``ended`` (ended, out of the store) back under its id as a wall session
        of viewer ``account``, with a new CSRF token: the person's token acts no more."""
        now = self._clock()
        session = Session(ended.id, account, "viewer", self._token(), now, now, wall=True)
        self._sessions[session.id] = session
        return session

    def of_account(self, account: str) -> list[Session]:
        return [s for s in self._sessions.values() if s.account == account]


C = TypeVar("C")


@dataclass
class _Link(Generic[C]):
    client: C
    digest: bytes
    sessions: set[str] = field(default_factory=set)


class AccountLinks(Generic[C]):
    """One client per account name, shared by the account's sessions."""

    def __init__(self, key: bytes | None = None) -> None:
        # A key of this process only: the digests mean nothing outside it.
        self._key = key if key is not None else secrets.token_bytes(TOKEN_BYTES)
        self._links: dict[str, _Link[C]] = {}

    def _digest(self, password: str) -> bytes:
        return hmac.new(self._key, password.encode(), hashlib.sha256).digest()

    def __contains__(self, name: str) -> bool:
        return name in self._links

    def names(self) -> list[str]:
        return list(self._links)

    def client(self, name: str) -> C | None:
        link = self._links.get(name)
        return None if link is None else link.client

    def clients(self) -> list[C]:
        return [link.client for link in self._links.values()]

    def password_matches(self, name: str, password: str) -> bool:
        """Whether ``password`` is the one ``name``'s client connected with."""
        link = self._links.get(name)
        return link is not None and hmac.compare_digest(link.digest, self._digest(password))

    def add(self, name: str, password: str, client: C) -> None:
        if name in self._links:
            raise ValueError(f"account {name} already has a client")
        self._links[name] = _Link(client, self._digest(password))

    def attach(self, name: str, session_id: str) -> None:
        self._links[name].sessions.add(session_id)

    def detach(self, name: str, session_id: str) -> C | None:
        """Take session ``session_id`` off ``name``'s client; the client, removed, when that
        was its last session (the caller closes it), else None."""
        link = self._links.get(name)
        if link is None:
            return None
        link.sessions.discard(session_id)
        if link.sessions:
            return None
        del self._links[name]
        return link.client

    def remove(self, name: str) -> C | None:
        link = self._links.pop(name, None)
        return None if link is None else link.client
