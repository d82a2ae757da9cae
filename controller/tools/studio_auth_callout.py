"""``livetable studio auth-callout``: who may connect to the studio's NATS cluster, and as what.

nats-server has no ``use_username_as_clientid``: any account that may connect at all could
connect with a table's client id, and the node would then close the table's own connection
("a remote connection has started with the same client ID"), again at every reconnect. What
it has is the auth callout: with ``authorization { auth_callout { ... } }`` (written by
:func:`controller.tools.studio_accounts.nats_authorization`) a node sends every new connection but
the callout's own to ``$SYS.REQ.USER.AUTH`` as a JWT signed by the node, whose
``nats.client_info.mqtt_id`` is the MQTT client id of the CONNECT (nats-server's
``fillClientInfo``, server/auth_callout.go), and waits for an answer signed by the issuer key
it was given. The MQTT CONNECT is authorised before the node looks at the client id's
session, so a refused client never closes anyone's connection.

This service answers: it checks the account's password (the environment variable
``LIVETABLE_PASSWORD_<NAME>``, a bcrypt hash as ``nats server passwd`` makes, or the
password), refuses a client id that belongs to another account
(:func:`controller.tools.studio_accounts.client_id_owners`: a table's daemon's and every account's
own name), refuses anything but MQTT, and otherwise answers with a user JWT carrying the
account's permissions (:func:`controller.tools.studio_accounts.nats_permissions`), as the
authorization block's ``users`` did before.

Every host of a node runs one, connected to its own node: the requests are a queue
subscription, so any one of them answers, and the loss of a node loses one of three.

The pieces that decide (:func:`decide`, :func:`answer`) take everything as arguments; only
:func:`serve` does I/O. JWTs here are NATS's (nats-io/jwt v2): ``ed25519-nkey`` signatures
by nkeys.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import logging
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.kernel.errors import ConfigurationError
from controller.tools.studio_accounts import (
    CALLOUT_PASSWORD_VARIABLE,
    CALLOUT_SUBJECT,
    CALLOUT_USER,
    Account,
    Studio,
    client_id_refusal,
    nats_permissions,
    password_variable,
)

log = logging.getLogger("livetable.auth_callout")

# nats-server's global account, where config-mode users (and so the studio's MQTT clients,
# sessions and retained messages) live; the callout's answer places the user there.
GLOBAL_ACCOUNT = "$G"
# The queue group of the callout services: each request goes to one of them.
QUEUE_GROUP = "livetable-auth-callout"
# nats-server's client type of an MQTT connection in client_info.type.
MQTT_CLIENT_TYPE = "mqtt"
_JWT_HEADER = {"typ": "JWT", "alg": "ed25519-nkey"}


# -- keys and JWTs ----------------------------------------------------------------------------


def new_issuer_seed() -> bytes:
    """A new account nkey seed (``SA...``): the key the callout signs its answers with."""
    import nacl.signing
    import nkeys

    raw = nacl.signing.SigningKey.generate().encode()
    return bytes(nkeys.encode_seed(raw, nkeys.PREFIX_BYTE_ACCOUNT))


class IssuerKey:
    """An account nkey from its seed: signs, and names its public key (``A...``)."""

    def __init__(self, seed: bytes) -> None:
        import nkeys

        try:
            self._pair = nkeys.from_seed(bytearray(seed.strip()))
        except Exception as error:  # nkeys raises its own errors and binascii's
            raise ConfigurationError(f"not an nkey seed: {error}") from error
        self.public_key = bytes(self._pair.public_key).decode()
        if not self.public_key.startswith("A"):
            raise ConfigurationError(
                f"the callout's key must be an account nkey (SA...), not {self.public_key[0]}..."
            )

    def sign(self, data: bytes) -> bytes:
        return bytes(self._pair.sign(data))


def load_issuer_key(path: Path) -> IssuerKey:
    try:
        return IssuerKey(path.read_bytes())
    except ConfigurationError as error:
        raise ConfigurationError(f"{path}: {error}") from error


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_jwt(claims: dict[str, Any], key: IssuerKey) -> str:
    """A NATS JWT of ``claims`` issued by ``key`` (``iss``, ``jti`` added)."""
    body = {**claims, "iss": key.public_key}
    unsigned = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    # nats-io/jwt names a claim by a hash of it; nothing checks it but it must be there.
    body["jti"] = base64.b32encode(hashlib.sha256(unsigned).digest()).decode().rstrip("=")
    head = _b64(json.dumps(_JWT_HEADER, separators=(",", ":")).encode())
    payload = _b64(json.dumps(body, separators=(",", ":")).encode())
    signing_input = f"{head}.{payload}".encode()
    return f"{head}.{payload}.{_b64(key.sign(signing_input))}"


def jwt_claims(token: str) -> dict[str, Any]:
    """The claims of a JWT, unverified: the requests come on a subject that only the nodes
    publish on (no account may publish there, the callout's own user may not publish at all),
    over the node's authenticated connection."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("not a JWT (three parts)")
    claims = json.loads(_unb64(parts[1]))
    if not isinstance(claims, dict):
        raise ValueError("a JWT whose claims are not an object")
    return claims


# -- the decision -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AuthRequest:
    """What a node asks about one connection (nats-io/jwt's AuthorizationRequest)."""

    user_nkey: str  # the key the answer's user JWT must be for
    server_id: str  # the node that asks (the answer's audience)
    server_name: str
    username: str
    password: str
    client_type: str  # "mqtt", "nats", "websocket", ...
    mqtt_client_id: str
    host: str


def parse_request(token: str) -> AuthRequest:
    nats = jwt_claims(token).get("nats") or {}
    server = nats.get("server_id") or {}
    client = nats.get("client_info") or {}
    connect = nats.get("connect_opts") or {}
    user_nkey = str(nats.get("user_nkey") or "")
    if not user_nkey or not server.get("id"):
        raise ValueError("an authorization request without user_nkey or server_id.id")
    return AuthRequest(
        user_nkey=user_nkey,
        server_id=str(server["id"]),
        server_name=str(server.get("name") or ""),
        username=str(connect.get("user") or ""),
        password=str(connect.get("pass") or ""),
        client_type=str(client.get("type") or ""),
        mqtt_client_id=str(client.get("mqtt_id") or ""),
        host=str(client.get("host") or ""),
    )


def check_password(stored: str, given: str) -> bool:
    """``given`` against ``stored``: a bcrypt hash (``$2a$``, ``$2b$``, ``$2y$``, as nats-server
    takes them) or the password itself, as nats-server's own users allow both."""
    if stored.startswith("$2"):
        import bcrypt

        try:
            return bcrypt.checkpw(given.encode(), stored.encode())
        except ValueError:  # not a well-formed hash: refused, and said at start
            return False
    return hmac.compare_digest(stored.encode(), given.encode())


@dataclass(frozen=True)
class Decision:
    account: Account | None
    # Why the connection is refused (None when it is not); said in the service's log and,
    # by the node, in its own ("auth callout service returned an error: ...").
    refusal: str | None


def decide(
    studio: Studio,
    passwords: Mapping[str, str],
    request: AuthRequest,
    password_ok: Callable[[str, str], bool] = check_password,
) -> Decision:
    """Whether ``request``'s connection may in, and as which account."""
    account = next((a for a in studio.accounts if a.name == request.username), None)
    stored = passwords.get(request.username)
    if account is None or stored is None or not password_ok(stored, request.password):
        return Decision(None, f"user {request.username!r}: unknown or wrong password")
    if request.client_type != MQTT_CLIENT_TYPE:
        return Decision(None, f"user {account.name!r}: MQTT only, not {request.client_type!r}")
    refusal = client_id_refusal(studio, account.name, request.mqtt_client_id)
    if refusal is not None:
        return Decision(None, refusal)
    return Decision(account, None)


def user_claims(studio: Studio, account: Account, request: AuthRequest, now: int) -> dict[str, Any]:
    """The user JWT's claims: the account's permissions, MQTT only, in the global account."""
    permissions = nats_permissions(studio, account)
    return {
        "sub": request.user_nkey,
        "name": account.name,
        "aud": GLOBAL_ACCOUNT,
        "iat": now,
        "nats": {
            "pub": {"allow": list(permissions.publish)},
            "sub": {"allow": list(permissions.subscribe)},
            "subs": -1,
            "data": -1,
            "payload": -1,
            "allowed_connection_types": ["MQTT"],
            "type": "user",
            "version": 2,
        },
    }


def answer(
    studio: Studio,
    passwords: Mapping[str, str],
    key: IssuerKey,
    request: AuthRequest,
    now: int,
    password_ok: Callable[[str, str], bool] = check_password,
) -> tuple[str, Decision]:
    """The signed answer to ``request`` (a user JWT, or the refusal), and the decision."""
    decision = decide(studio, passwords, request, password_ok)
    response: dict[str, Any] = {"type": "authorization_response", "version": 2}
    if decision.account is None:
        response["error"] = decision.refusal
    else:
        response["jwt"] = encode_jwt(user_claims(studio, decision.account, request, now), key)
    token = encode_jwt(
        {"sub": request.user_nkey, "aud": request.server_id, "iat": now, "nats": response}, key
    )
    return token, decision


def account_passwords(
    studio: Studio, environ: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """Each account's stored password from ``environ``, and the accounts that have none
    (those are refused)."""
    passwords: dict[str, str] = {}
    missing: list[str] = []
    for account in studio.accounts:
        value = environ.get(password_variable(account.name))
        if value:
            passwords[account.name] = value
        else:
            missing.append(account.name)
    return passwords, missing


# -- the service ------------------------------------------------------------------------------


class _VerifiedPasswords:
    """bcrypt at nats-server's cost takes 0.1-0.3 s of CPU: after a node is lost, every table
    it had reconnects within seconds, and each connection waits for its answer (the
    authorization block's timeout). A password once verified against a stored value is
    remembered (as a keyed digest) until that stored value changes."""

    def __init__(self) -> None:
        self._key = os.urandom(32)
        self._known: set[bytes] = set()

    def _digest(self, stored: str, given: str) -> bytes:
        return hmac.new(self._key, f"{stored}\0{given}".encode(), hashlib.sha256).digest()

    def check(self, stored: str, given: str) -> bool:
        digest = self._digest(stored, given)
        if digest in self._known:
            return True
        if check_password(stored, given):
            self._known.add(digest)
            return True
        return False

    async def verify(self, stored: str, given: str) -> bool:
        if not stored.startswith("$2"):
            return check_password(stored, given)
        if self._digest(stored, given) in self._known:
            return True
        # bcrypt releases the GIL: other requests are answered meanwhile.
        return await asyncio.to_thread(self.check, stored, given)


async def serve(
    studio: Studio,
    passwords: Mapping[str, str],
    key: IssuerKey,
    servers: Sequence[str],
    password: str,
    stop: asyncio.Event,
    ready: Callable[[], None] = lambda: None,
) -> None:
    """Answer the nodes' authorization requests until ``stop`` is set, connected as
    :data:`CALLOUT_USER` to ``servers`` (reconnecting to any of them for ever)."""
    import nats
    import nats.errors

    verified = _VerifiedPasswords()
    # The answers being worked out: the event loop keeps only weak references to tasks.
    working: set[asyncio.Task[None]] = set()

    async def respond(message: Any) -> None:
        try:
            request = parse_request(message.data.decode())
        except (ValueError, UnicodeDecodeError) as error:
            log.warning("an authorization request not understood: %s", error)
            return
        stored = passwords.get(request.username)
        ok = stored is not None and await verified.verify(stored, request.password)
        token, decision = answer(
            studio,
            passwords,
            key,
            request,
            now=int(time.time()),
            password_ok=lambda _stored, _given: ok,
        )
        if decision.refusal is not None:
            log.warning(
                "refused %s from %s on %s (client id %r): %s",
                request.client_type or "a client",
                request.host,
                request.server_name,
                request.mqtt_client_id,
                decision.refusal,
            )
        else:
            log.info(
                "%s as %r on %s", request.username, request.mqtt_client_id, request.server_name
            )
        with contextlib.suppress(nats.errors.Error):
            await message.respond(token.encode())

    async def on_message(message: Any) -> None:
        # Each request in its own task: a bcrypt check does not hold up the next one.
        task = asyncio.get_running_loop().create_task(respond(message))
        working.add(task)
        task.add_done_callback(_finished(working))

    async def on_error(error: Exception) -> None:
        log.warning("NATS: %s", error)

    async def on_disconnected() -> None:
        log.warning("lost the NATS node; connecting again")

    async def on_reconnected() -> None:
        log.warning("connected again to %s", client.connected_url.netloc)

    delay = 0.5
    while True:
        try:
            client = await nats.connect(
                servers=list(servers),
                user=CALLOUT_USER,
                password=password,
                name=CALLOUT_USER,
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                reconnect_time_wait=1,
                error_cb=on_error,
                disconnected_cb=on_disconnected,
                reconnected_cb=on_reconnected,
            )
            break
        except (OSError, nats.errors.Error) as error:
            log.warning("no NATS node answers at %s (%s); again in %.1f s", servers, error, delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
            if stop.is_set():
                return
            delay = min(delay * 2, 5.0)
    try:
        await client.subscribe(CALLOUT_SUBJECT, queue=QUEUE_GROUP, cb=on_message)
        await client.flush()
        log.info(
            "answering the authorization requests of %s for %d account(s), issuer %s",
            client.connected_url.netloc,
            len(studio.accounts),
            key.public_key,
        )
        ready()
        await stop.wait()
    finally:
        with contextlib.suppress(Exception):
            await client.drain()


def _finished(working: set[asyncio.Task[None]]) -> Callable[[asyncio.Task[None]], None]:
    def done(task: asyncio.Task[None]) -> None:
        working.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # Unanswered, the node refuses the connection after its timeout; say why here.
            log.error("an authorization request went unanswered: %r", task.exception())

    return done


def run_service(
    studio: Studio,
    key: IssuerKey,
    servers: Sequence[str],
    environ: Mapping[str, str],
    ready: Callable[[], None] = lambda: None,
) -> int:
    """Serve until SIGTERM or SIGINT; 0 then."""
    password = environ.get(CALLOUT_PASSWORD_VARIABLE)
    if not password:
        raise ConfigurationError(
            f"the callout's own NATS password: set {CALLOUT_PASSWORD_VARIABLE} in the "
            "environment (the unit's EnvironmentFile)"
        )
    passwords, missing = account_passwords(studio, environ)
    if missing:
        log.warning(
            "no password for %s (%s): refused until it is set and the service restarted",
            ", ".join(missing),
            ", ".join(password_variable(name) for name in missing),
        )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await serve(studio, passwords, key, servers, password, stop, ready)

    asyncio.run(main())
    return 0
