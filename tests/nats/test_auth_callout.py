"""The NATS auth callout's decisions and answers (controller/tools/studio_auth_callout.py),
without a server: the requests are built as nats-server builds them (nats-io/jwt's
AuthorizationRequest claims), and the answers are checked as nats-server checks them: signed
by the issuer's nkey, for the user nkey and the node asked about. On a real cluster:
tests/nats."""

from __future__ import annotations

import base64
import json
from typing import Any

import bcrypt
import nacl.signing
import nkeys
import pytest

from controller.kernel.errors import ConfigurationError
from controller.tools.studio_accounts import nats_permissions, parse_accounts
from controller.tools.studio_auth_callout import (
    AuthRequest,
    IssuerKey,
    account_passwords,
    answer,
    check_password,
    decide,
    encode_jwt,
    jwt_claims,
    new_issuer_seed,
    parse_request,
)

STUDIO = parse_accounts(
    """
[[account]]
name = "livetable-t1"
role = "table"
tables = ["t1"]

[[account]]
name = "alice"
role = "supervisor"

[[account]]
name = "viewer"
role = "viewer"
"""
)
PASSWORDS = {"livetable-t1": "table-secret", "alice": "alice-secret", "viewer": "viewer-secret"}
USER_NKEY = "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"
SERVER_ID = "NDJ4LNDGCBEXAMPLESERVERIDN2ALJMC5CFG5FJWSQWHRMQMVIUM4GCPE"


def request(user: str, password: str, client_id: str, client_type: str = "mqtt") -> AuthRequest:
    return AuthRequest(
        user_nkey=USER_NKEY,
        server_id=SERVER_ID,
        server_name="n2",
        username=user,
        password=password,
        client_type=client_type,
        mqtt_client_id=client_id,
        host="127.0.0.1",
    )


def verified(token: str, issuer: str) -> dict[str, Any]:
    """The claims of ``token`` once its signature checks against ``issuer`` (as nats-io/jwt's
    Decode: the signature is over the header and the claims as sent)."""
    head, payload, signature = token.split(".")
    assert json.loads(base64.urlsafe_b64decode(head + "==")) == {
        "typ": "JWT",
        "alg": "ed25519-nkey",
    }
    # A public nkey: base32 of a prefix byte, the 32-byte ed25519 key and a CRC-16.
    raw_key = base64.b32decode(issuer + "=" * (-len(issuer) % 8))[1:33]
    padded = signature + "=" * (-len(signature) % 4)
    nacl.signing.VerifyKey(raw_key).verify(
        f"{head}.{payload}".encode(), base64.urlsafe_b64decode(padded)
    )
    claims = jwt_claims(token)
    assert claims["iss"] == issuer and claims["jti"]
    return claims


@pytest.fixture(scope="module")
def key() -> IssuerKey:
    return IssuerKey(new_issuer_seed())


def test_a_new_key_is_an_account_nkey(key: IssuerKey) -> None:
    assert key.public_key.startswith("A") and len(key.public_key) == 56
    with pytest.raises(ConfigurationError, match="not an nkey seed"):
        IssuerKey(b"SAnot-a-seed")
    user_seed = nkeys.encode_seed(bytes(32), nkeys.PREFIX_BYTE_USER)
    with pytest.raises(ConfigurationError, match="must be an account nkey"):
        IssuerKey(bytes(user_seed))


def test_a_request_is_read_as_nats_server_sends_it(key: IssuerKey) -> None:
    # A request as nats-server 2.15 encodes one (server/auth_callout.go), for an MQTT client.
    token = encode_jwt(
        {
            "sub": key.public_key,
            "aud": "nats-authorization-request",
            "nats": {
                "server_id": {"name": "n2", "host": "127.0.0.1", "id": SERVER_ID},
                "user_nkey": USER_NKEY,
                "client_info": {
                    "host": "127.0.0.1",
                    "id": 12,
                    "user": "viewer",
                    "kind": "Client",
                    "type": "mqtt",
                    "mqtt_id": "livetable-t1",
                },
                "connect_opts": {"user": "viewer", "pass": "viewer-secret", "protocol": 0},
                "type": "authorization_request",
                "version": 2,
            },
        },
        key,
    )
    assert parse_request(token) == request("viewer", "viewer-secret", "livetable-t1")
    with pytest.raises(ValueError):
        parse_request("not.a-jwt")
    with pytest.raises(ValueError, match="user_nkey"):
        parse_request(encode_jwt({"nats": {"server_id": {"id": SERVER_ID}}}, key))


@pytest.mark.parametrize(
    ("user", "password", "client_id", "client_type", "refusal"),
    [
        ("livetable-t1", "table-secret", "livetable-t1", "mqtt", None),
        ("livetable-t1", "table-secret", "livetable-t1-answers", "mqtt", None),
        ("alice", "alice-secret", "alice", "mqtt", None),
        ("alice", "alice-secret", "alice-3f2a", "mqtt", None),
        ("viewer", "viewer-secret", "livetable-t1", "mqtt", "is 'livetable-t1''s, not 'viewer''s"),
        ("alice", "alice-secret", "livetable-t1", "mqtt", "is 'livetable-t1''s, not 'alice''s"),
        ("alice", "alice-secret", "viewer", "mqtt", "is 'viewer''s, not 'alice''s"),
        ("alice", "wrong", "alice-1", "mqtt", "unknown or wrong password"),
        ("alice", "", "alice-1", "mqtt", "unknown or wrong password"),
        ("mallory", "anything", "mallory", "mqtt", "unknown or wrong password"),
        ("alice", "alice-secret", "", "nats", "MQTT only, not 'nats'"),
        ("alice", "alice-secret", "", "websocket", "MQTT only, not 'websocket'"),
    ],
)
def test_who_may_connect_with_which_client_id(
    user: str, password: str, client_id: str, client_type: str, refusal: str | None
) -> None:
    decision = decide(STUDIO, PASSWORDS, request(user, password, client_id, client_type))
    if refusal is None:
        assert decision.refusal is None and decision.account is not None
        assert decision.account.name == user
    else:
        assert decision.account is None
        assert decision.refusal is not None and refusal in decision.refusal


def test_an_account_without_a_password_is_refused() -> None:
    passwords, missing = account_passwords(
        STUDIO, {"LIVETABLE_PASSWORD_ALICE": "alice-secret", "LIVETABLE_PASSWORD_VIEWER": ""}
    )
    assert passwords == {"alice": "alice-secret"}
    assert missing == ["livetable-t1", "viewer"]
    decision = decide(STUDIO, passwords, request("livetable-t1", "", "livetable-t1"))
    assert decision.account is None


def test_passwords_as_bcrypt_hashes_or_as_themselves() -> None:
    hashed = bcrypt.hashpw(b"alice-secret", bcrypt.gensalt(rounds=4)).decode()
    assert check_password(hashed, "alice-secret")
    assert not check_password(hashed, "alice-secreT")
    assert not check_password("$2a$11$not-a-hash", "alice-secret")
    assert check_password("plain", "plain") and not check_password("plain", "plain ")


def test_an_accepted_connection_gets_its_accounts_permissions_mqtt_only(key: IssuerKey) -> None:
    token, decision = answer(
        STUDIO, PASSWORDS, key, request("alice", "alice-secret", "alice-console"), now=1_700_000_000
    )
    assert decision.refusal is None
    response = verified(token, key.public_key)
    # nats-server checks these: the answer is for the user key it made, to itself.
    assert response["sub"] == USER_NKEY and response["aud"] == SERVER_ID
    assert response["nats"]["type"] == "authorization_response"
    assert "error" not in response["nats"]
    user = verified(response["nats"]["jwt"], key.public_key)
    assert user["sub"] == USER_NKEY
    assert user["name"] == "alice"
    assert user["aud"] == "$G"  # placed in the global account, with the sessions
    alice = next(account for account in STUDIO.accounts if account.name == "alice")
    permissions = nats_permissions(STUDIO, alice)
    assert user["nats"]["pub"] == {"allow": list(permissions.publish)}
    assert user["nats"]["sub"] == {"allow": list(permissions.subscribe)}
    assert user["nats"]["allowed_connection_types"] == ["MQTT"]
    assert user["nats"]["type"] == "user" and user["nats"]["version"] == 2


def test_a_refused_connection_gets_the_reason_and_no_user(key: IssuerKey) -> None:
    token, decision = answer(
        STUDIO, PASSWORDS, key, request("viewer", "viewer-secret", "livetable-t1"), now=1
    )
    response = verified(token, key.public_key)
    assert response["sub"] == USER_NKEY and response["aud"] == SERVER_ID
    assert "jwt" not in response["nats"]
    assert response["nats"]["error"] == decision.refusal
    assert "livetable-t1" in response["nats"]["error"]
