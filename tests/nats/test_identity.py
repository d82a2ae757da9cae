"""Who may do what on a real three-node NATS cluster with the authorisation that
``livetable studio accounts`` generates: the cases tests/daemon/test_security.py checks on
mosquitto with the shipped ACL, here with the broker's own clients on different nodes.

nats-server with MQTT 3.1.1 answers a refused PUBLISH with a PUBACK all the same, keeps the
connection, drops the message and logs "Publish Violation"; a refused SUBSCRIBE gets the
SUBACK failure code 0x80. Absence is shown after a marker: the same client's next, allowed
publish reaches the table's subscriber, and nats-server keeps one publisher's messages in
order, so a refused one that had got through would have come first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.nats.conftest import SecureCluster
from tests.support.nats import MqttPeer
from tests.support.wait import wait_until

TIMEOUT_S = 15.0
BASE = "livetable/t1"


@pytest.fixture
def login(secure_nats_cluster: SecureCluster) -> Iterator[Callable[..., MqttPeer]]:
    """``login(account, node=1)``: a connected MQTT 3.1.1 client of that account."""
    made: list[MqttPeer] = []

    def make(account: str, node: int = 1, *, client_id: str | None = None) -> MqttPeer:
        peer = MqttPeer(
            secure_nats_cluster.cluster.node(node).mqtt_port,
            client_id=client_id or f"{account}-{len(made)}",
            login=(account, secure_nats_cluster.passwords[account]),
        )
        made.append(peer)
        return peer.wait_connected()

    yield make
    for peer in made:
        peer.close()


@pytest.fixture
def table(login: Callable[..., MqttPeer]) -> MqttPeer:
    """The table's account on node 2, reading its requests as the daemon does."""
    daemon = login("livetable-t1", 2, client_id="livetable-t1")
    assert daemon.subscribe(f"{BASE}/request/+/+/+") == ["granted"]
    return daemon


def request(role: str, account: str, command: str) -> str:
    return f"{BASE}/request/{role}/{account}/{command}"


def refused_then_marker(
    sender: MqttPeer, table: MqttPeer, refused: str, marker: str, payload: bytes
) -> None:
    """``sender`` publishes on ``refused`` (acknowledged, and dropped) and then on its own
    ``marker``; the table gets the marker and never the refused one."""
    assert sender.publish(refused, payload), "nats-server did not acknowledge the publish"
    assert sender.publish(marker, b"marker")
    wait_until(lambda: table.payloads(marker), TIMEOUT_S, f"the marker on {marker}")
    assert table.payloads(refused) == []
    assert payload not in [p for _t, p, _r in table.received()]
    # 3.1.1 cannot say "not authorised": nats-server keeps the connection.
    assert sender.connected.is_set() and sender.disconnects == []


def test_the_platform_cannot_publish_a_supervisors_pause(
    login: Callable[..., MqttPeer], table: MqttPeer
) -> None:
    platform = login("platform", 1)
    refused_then_marker(
        platform,
        table,
        request("supervisor", "alice", "pause"),
        request("platform", "platform", "status"),
        b'{"transaction": "forged-pause"}',
    )


def test_alice_cannot_publish_as_bob(login: Callable[..., MqttPeer], table: MqttPeer) -> None:
    alice = login("alice", 3)
    refused_then_marker(
        alice,
        table,
        request("supervisor", "bob", "cancel"),
        request("supervisor", "alice", "status"),
        b'{"transaction": "as-bob"}',
    )


def test_a_viewer_cannot_publish_a_supervisors_request(
    login: Callable[..., MqttPeer], table: MqttPeer
) -> None:
    viewer = login("viewer", 1)
    refused_then_marker(
        viewer,
        table,
        request("supervisor", "viewer", "pause"),
        request("viewer", "viewer", "status"),
        b'{"transaction": "viewer-pause"}',
    )


def test_a_dotted_account_publishes_its_own_requests_and_no_others(
    login: Callable[..., MqttPeer], table: MqttPeer
) -> None:
    # carol.smith's '.' is '//' in the subject nats-server checks. nats-server refuses a
    # '.' in a client id (below), so her client id cannot be her name.
    carol = login("carol.smith", 3, client_id="carol-smith-console")
    refused_then_marker(
        carol,
        table,
        request("supervisor", "carol", "pause"),
        request("supervisor", "carol.smith", "pause"),
        b'{"transaction": "carol-without-smith"}',
    )


def test_nobody_but_the_table_publishes_its_state(
    login: Callable[..., MqttPeer], table: MqttPeer
) -> None:
    watcher = login("viewer", 3)
    assert watcher.subscribe(f"{BASE}/state", f"{BASE}/events") == ["granted", "granted"]
    for account in ("platform", "alice", "viewer"):
        impostor = login(account, 1)
        assert impostor.publish(f"{BASE}/state", f'{{"by": "{account}"}}'.encode(), retain=True)
        assert impostor.publish(f"{BASE}/events", f'{{"by": "{account}"}}'.encode())
    assert table.publish(f"{BASE}/state", b'{"by": "the table"}', retain=True)
    wait_until(lambda: watcher.payloads(f"{BASE}/state"), TIMEOUT_S, "the table's own state")
    assert watcher.payloads(f"{BASE}/state") == [b'{"by": "the table"}']
    assert watcher.payloads(f"{BASE}/events") == []
    # The retained state a newcomer gets is the table's, on every node.
    for node in (1, 2, 3):
        late = login("alice", node)
        assert late.subscribe(f"{BASE}/state") == ["granted"]
        wait_until(lambda late=late: late.payloads(f"{BASE}/state"), TIMEOUT_S, "a state")
        assert late.payloads(f"{BASE}/state") == [b'{"by": "the table"}']


def test_an_account_cannot_read_another_accounts_responses(
    login: Callable[..., MqttPeer], table: MqttPeer
) -> None:
    alice = login("alice", 1)
    bob = login("bob", 3)
    assert alice.subscribe(f"{BASE}/response/alice") == ["granted"]
    assert bob.subscribe(f"{BASE}/response/alice") == ["refused"]
    assert bob.subscribe("livetable/+/response/#") == ["refused"]
    assert bob.subscribe("livetable/#") == ["refused"]
    assert bob.subscribe(f"{BASE}/request/#") == ["refused"]
    assert bob.subscribe(f"{BASE}/response/bob") == ["granted"]
    assert table.publish(f"{BASE}/response/alice", b'{"for": "alice"}')
    assert table.publish(f"{BASE}/response/bob", b'{"for": "bob"}')
    wait_until(lambda: alice.payloads(f"{BASE}/response/alice"), TIMEOUT_S, "alice's answer")
    wait_until(lambda: bob.payloads(f"{BASE}/response/bob"), TIMEOUT_S, "bob's answer")
    assert [topic for topic, _p, _r in bob.received()] == [f"{BASE}/response/bob"]


def test_nats_server_refuses_a_client_id_with_a_dot(secure_nats_cluster: SecureCluster) -> None:
    peer = MqttPeer(
        secure_nats_cluster.cluster.node(1).mqtt_port,
        client_id="carol.smith",
        login=("carol.smith", secure_nats_cluster.passwords["carol.smith"]),
    )
    try:
        wait_until(lambda: peer.connack, TIMEOUT_S, "a CONNACK")
        assert peer.connack == "Client identifier not valid", peer.connack
        assert not peer.connected.is_set()
    finally:
        peer.close()


def test_the_internal_delivery_subjects_granted_are_no_way_to_read_others_messages(
    login: Callable[..., MqttPeer], table: MqttPeer
) -> None:
    """Every account may subscribe to ``$MQTT.sub.>`` (where nats-server delivers QoS 1
    messages); over MQTT that subject is out of reach."""
    alice = login("alice", 1)
    assert alice.subscribe(f"{BASE}/response/alice") == ["granted"]
    bob = login("bob", 1)
    assert bob.subscribe("$MQTT/sub/#") == ["refused"]
    assert bob.subscribe("$MQTT/#") == ["refused"]
    assert bob.subscribe(f"{BASE}/response/bob") == ["granted"]
    assert table.publish(f"{BASE}/response/alice", b"for alice")
    assert table.publish(f"{BASE}/response/bob", b"marker")
    wait_until(lambda: bob.payloads(f"{BASE}/response/bob"), TIMEOUT_S, "the marker")
    wait_until(lambda: alice.payloads(f"{BASE}/response/alice"), TIMEOUT_S, "alice's answer")
    assert [topic for topic, _p, _r in bob.received()] == [f"{BASE}/response/bob"]


def test_the_platform_does_not_read_the_dealers_line_and_a_viewer_does(
    login: Callable[..., MqttPeer],
) -> None:
    assert login("platform", 2).subscribe(f"{BASE}/dealer") == ["refused"]
    assert login("viewer", 2).subscribe(f"{BASE}/dealer", "livetable/+/dealer") == [
        "granted",
        "granted",
    ]


def test_a_wrong_password_or_an_unknown_account_is_refused(
    secure_nats_cluster: SecureCluster,
) -> None:
    port = secure_nats_cluster.cluster.node(1).mqtt_port
    for user, password in (("alice", "not-alices"), ("mallory", "anything")):
        peer = MqttPeer(port, client_id=f"{user}-x", login=(user, password))
        try:
            wait_until(lambda peer=peer: peer.connack, TIMEOUT_S, "a CONNACK")
            assert peer.connack == "Not authorized", peer.connack
            assert not peer.connected.is_set()
        finally:
            peer.close()


def refused(port: int, account: str, password: str, client_id: str) -> str | None:
    """The CONNACK a connection of ``account`` with ``client_id`` gets, checking it is not
    connected."""
    peer = MqttPeer(port, client_id=client_id, login=(account, password))
    try:
        wait_until(lambda: peer.connack, TIMEOUT_S, f"a CONNACK for {account} as {client_id}")
        assert not peer.connected.is_set()
        return peer.connack
    finally:
        peer.close()


def test_another_account_cannot_take_the_tables_client_id(
    login: Callable[..., MqttPeer], table: MqttPeer, secure_nats_cluster: SecureCluster
) -> None:
    """nats-server has no use_username_as_clientid: without the auth callout, another
    account's connection with the table's client id closed the table's ('a remote connection
    has started with the same client ID'). The callout refuses it, on every node (the
    table's own, node 2, included), for every role."""
    cluster, passwords = secure_nats_cluster.cluster, secure_nats_cluster.passwords
    for account, node in (("viewer", 3), ("platform", 2), ("alice", 1), ("carol.smith", 2)):
        connack = refused(cluster.node(node).mqtt_port, account, passwords[account], "livetable-t1")
        assert connack == "Not authorized", (account, node, connack)
    # The table kept its connection and its subscription: a request sent now reaches it.
    viewer = login("viewer", 1)
    assert viewer.publish(request("viewer", "viewer", "status"), b"marker")
    wait_until(
        lambda: table.payloads(request("viewer", "viewer", "status")) or table.disconnects,
        TIMEOUT_S,
        "the marker at the table, or the table's connection closed",
    )
    assert table.disconnects == [], "the table's connection was closed by the intruder's"
    assert table.payloads(request("viewer", "viewer", "status")) == [b"marker"]


def test_an_accounts_own_name_is_its_client_id_alone(
    login: Callable[..., MqttPeer], secure_nats_cluster: SecureCluster
) -> None:
    """As on mosquitto, where every account's client id is its name: bob cannot be 'alice',
    and no account but the table's can be the table's account's name."""
    cluster, passwords = secure_nats_cluster.cluster, secure_nats_cluster.passwords
    alice = login("alice", 1, client_id="alice")
    assert refused(cluster.node(2).mqtt_port, "bob", passwords["bob"], "alice") == (
        "Not authorized"
    )
    assert refused(cluster.node(3).mqtt_port, "viewer", passwords["viewer"], "livetable-t1") == (
        "Not authorized"
    )
    assert alice.connected.is_set() and alice.disconnects == []
    # Any other client id is anyone's, the table's account included.
    assert login("livetable-t1", 3, client_id="livetable-t1-answers").connected.is_set()
    assert login("bob", 3, client_id="bob-console-1").connected.is_set()


def test_the_tables_persistent_session_cannot_be_resumed_by_another_account(
    login: Callable[..., MqttPeer], secure_nats_cluster: SecureCluster
) -> None:
    """The table's persistent session: bob, with the table's client id, is refused before
    nats-server looks at the session, so a request sent while the table is away waits in it
    for the table alone."""
    cluster, passwords = secure_nats_cluster.cluster, secure_nats_cluster.passwords
    own_login = ("livetable-t1", passwords["livetable-t1"])
    own = MqttPeer(
        cluster.node(1).mqtt_port, client_id="livetable-t1", login=own_login, clean=False
    ).wait_connected()
    assert own.subscribe(f"{BASE}/request/+/+/+") == ["granted"]
    own.close()
    thief = MqttPeer(
        cluster.node(2).mqtt_port,
        client_id="livetable-t1",
        login=("bob", passwords["bob"]),
        clean=False,
    )
    try:
        wait_until(lambda: thief.connack, TIMEOUT_S, "bob's CONNACK")
        assert thief.connack == "Not authorized"
        assert not thief.connected.is_set() and thief.received() == []
    finally:
        thief.close()
    alice = login("alice", 3)
    enter_card = request("supervisor", "alice", "enter_card")
    assert alice.publish(enter_card, b'{"card": "AS"}')
    back = MqttPeer(
        cluster.node(3).mqtt_port, client_id="livetable-t1", login=own_login, clean=False
    ).wait_connected()
    try:
        wait_until(lambda: back.payloads(enter_card), TIMEOUT_S, "the request kept in the session")
        assert back.payloads(enter_card) == [b'{"card": "AS"}']
    finally:
        back.close()


def test_an_accounts_password_works_over_mqtt_only(secure_nats_cluster: SecureCluster) -> None:
    """The callout lets the studio's accounts in over MQTT only: alice's password on the NATS
    protocol port is refused (the NATS port is the callout's and an administrator's)."""
    import asyncio

    import nats
    import nats.errors

    node = secure_nats_cluster.cluster.node(1)

    async def attempt() -> str:
        try:
            client = await nats.connect(
                f"nats://{node.host}:{node.client_port}",
                user="alice",
                password=secure_nats_cluster.passwords["alice"],
                allow_reconnect=False,
                max_reconnect_attempts=0,
                connect_timeout=TIMEOUT_S,
            )
        except (nats.errors.Error, OSError) as error:
            return str(error)
        await client.close()
        return "connected"

    outcome = asyncio.run(attempt())
    assert "authorization violation" in outcome.lower(), outcome
