"""The console's sessions, pure: the sign-in throttle, idle expiry, CSRF tokens and the one
broker client per account, on a clock the test moves by hand (no sleeping)."""

from __future__ import annotations

import pytest

from controller.console.sessions import (
    MAX_SIGN_IN_DELAY_S,
    AccountLinks,
    SessionStore,
    SignInThrottle,
    new_token,
    sign_in_delay,
    tokens_match,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_delay_doubles_with_each_failure_up_to_five_minutes() -> None:
    assert [sign_in_delay(n) for n in range(7)] == [0, 1, 2, 4, 8, 16, 32]
    assert sign_in_delay(9) == 256 and sign_in_delay(10) == MAX_SIGN_IN_DELAY_S == 300
    assert sign_in_delay(10_000) == 300


def test_five_failures_wait_1_2_4_8_16_s_and_a_success_resets_the_name() -> None:
    clock = Clock()
    throttle = SignInThrottle(clock)
    assert throttle.retry_after("alice") == 0
    for expected in (1, 2, 4, 8, 16):
        assert throttle.failed("alice") == expected
        assert throttle.retry_after("alice") == expected
        clock.now += expected - 0.5
        assert throttle.retry_after("alice") == 0.5, "not yet"
        clock.now += 0.5
        assert throttle.retry_after("alice") == 0, "now it may try again"
    assert throttle.failures("alice") == 5
    # Another name is not held back by alice's failures.
    throttle.failed("alice")
    assert throttle.retry_after("bob") == 0
    throttle.succeeded("alice")
    assert throttle.failures("alice") == 0 and throttle.retry_after("alice") == 0
    assert throttle.failed("alice") == 1, "the count starts again"


def test_a_flood_of_names_forgets_the_oldest_not_the_memory() -> None:
    throttle = SignInThrottle(Clock(), max_names=3)
    for name in ("a", "b", "c", "d"):
        throttle.failed(name)
    assert throttle.failures("a") == 0 and throttle.failures("d") == 1
    # A name failing again is the newest.
    throttle.failed("b")
    throttle.failed("e")
    assert throttle.failures("b") == 2 and throttle.failures("c") == 0


def test_a_session_ends_after_its_idle_time_and_each_request_starts_it_again() -> None:
    clock = Clock()
    store = SessionStore(900, clock)
    session = store.create("alice", "supervisor")
    assert store.get(session.id) is session
    clock.now += 899
    assert store.get(session.id) is session, "a request just in time"
    clock.now += 899
    # A look that is not a request (the stream's check) does not keep it alive.
    assert store.get(session.id, touch=False) is session
    clock.now += 1
    assert store.get(session.id) is None, "900 s without a request"
    assert [s.id for s in store.expire()] == [session.id]
    assert store.expire() == [] and len(store) == 0
    assert store.get(None) is None and store.get("") is None and store.get("forged") is None


def test_a_dealer_stations_session_is_a_kiosks_it_never_ends_for_being_idle() -> None:
    clock = Clock()
    store = SessionStore(900, clock)
    kiosk = store.create("dealer-t1", "dealer")
    person = store.create("alice", "supervisor")
    clock.now += 7 * 24 * 3600
    assert store.get(kiosk.id, touch=False) is kiosk
    assert [s.id for s in store.expire()] == [person.id]
    assert store.get(kiosk.id) is kiosk and len(store) == 1
    store.end(kiosk.id)
    assert store.get(kiosk.id) is None, "signed out, it ends"


def test_sessions_have_their_own_random_ids_and_csrf_tokens() -> None:
    store = SessionStore(900, Clock())
    first, second = store.create("alice", "supervisor"), store.create("alice", "supervisor")
    tokens = {first.id, first.csrf, second.id, second.csrf}
    assert len(tokens) == 4
    assert all(len(token) >= 43 for token in tokens), "256 bits, base64"
    assert store.of_account("alice") == [first, second]
    assert store.end(first.id) is first and store.get(first.id) is None
    assert store.get(second.id) is second


def test_csrf_tokens_match_only_themselves() -> None:
    token = new_token()
    assert tokens_match(token, token)
    assert not tokens_match(token, token[:-1])
    assert not tokens_match(token, new_token())
    assert not tokens_match(token, None) and not tokens_match(token, "")
    assert not tokens_match(None, None) and not tokens_match("", "")


def test_one_client_per_account_shared_by_its_sessions_and_handed_back_with_the_last() -> None:
    links: AccountLinks[str] = AccountLinks()
    links.add("alice", "her-password", "alice's client")
    with pytest.raises(ValueError):
        links.add("alice", "her-password", "a second client")
    links.attach("alice", "s1")
    links.attach("alice", "s2")
    assert links.password_matches("alice", "her-password")
    assert not links.password_matches("alice", "her-passwor")
    assert not links.password_matches("bob", "her-password")
    assert links.detach("alice", "s1") is None, "s2 still uses it"
    assert links.client("alice") == "alice's client"
    assert links.detach("alice", "s2") == "alice's client", "the last one: close it"
    assert "alice" not in links and links.client("alice") is None
    assert links.detach("alice", "s2") is None


def test_the_password_is_not_kept_only_a_keyed_digest() -> None:
    links: AccountLinks[object] = AccountLinks()
    links.add("alice", "correct horse", object())
    held = repr(vars(links)) + repr(links._links)
    assert "correct horse" not in held
    other: AccountLinks[object] = AccountLinks()
    other.add("alice", "correct horse", object())
    assert links._links["alice"].digest != other._links["alice"].digest, "a key per process"


def test_a_flood_of_made_up_names_never_wipes_out_the_delay_of_a_name_under_attack() -> None:
    clock = Clock()
    throttle = SignInThrottle(clock, max_names=10)
    for _ in range(6):
        throttle.failed("alice")
    held = throttle.retry_after("alice")
    assert held == 32
    # A guesser fails once each for many names, to push alice's entry out of the memory.
    for index in range(100):
        throttle.failed(f"junk-{index}")
    assert throttle.failures("alice") == 6 and throttle.retry_after("alice") == held
    assert len([n for n in (f"junk-{i}" for i in range(100)) if throttle.failures(n)]) == 9


def test_an_idle_session_goes_on_as_a_wall_session_while_its_page_watches() -> None:
    clock = Clock()
    store = SessionStore(idle_timeout_s=10, clock=clock, token=iter(map(str, range(100))).__next__)
    alice = store.create("alice", "supervisor")
    clock.now += 10
    assert store.get(alice.id) is None
    (ended,) = store.expire()
    wall = store.keep_as_wall(ended, "livetable-console")
    assert (wall.id, wall.account, wall.role, wall.wall) == (
        alice.id,
        "livetable-console",
        "viewer",
        True,
    )
    assert wall.csrf != alice.csrf, "the person's token acts no more"
    assert store.get(alice.id) is wall
    # Its page is open: it stays, however long nobody clicks.
    clock.now += 100
    assert store.expire(lambda session: session.id == alice.id) == []
    assert store.get(alice.id, touch=False) is wall
    # Closed: it ends like any idle session.
    clock.now += 10
    assert store.expire(lambda _session: False) == [wall]
    assert store.get(alice.id) is None
