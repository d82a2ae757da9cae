"""The per-account budgets (controller.service.request_limits), on a clock the test moves: of
table commands, a burst, then a steady rate, refused commands and supervisor commands each
counted; of events and audit pages, a few at a time, a burst, then a steady rate."""

from __future__ import annotations

from controller.service.request_limits import (
    READ_BURST,
    READ_PER_S,
    READS_AT_ONCE,
    REFUSED_BURST,
    REFUSED_PER_S,
    SUPERVISOR_BURST,
    SUPERVISOR_PER_S,
    CommandLimits,
    ReadLimits,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_refused_commands_get_a_burst_then_one_every_few_seconds() -> None:
    clock = Clock()
    limits = CommandLimits(clock)
    for _ in range(REFUSED_BURST):
        assert limits.refusal("platform", "platform") is None
        limits.taken("platform", "platform", refused=True)
    why = limits.refusal("platform", "platform")
    assert why is not None and "platform" in why and "send it again in" in why
    # Other accounts keep their own budget.
    assert limits.refusal("other", "platform") is None
    clock.now += 1 / REFUSED_PER_S
    assert limits.refusal("platform", "platform") is None
    limits.taken("platform", "platform", refused=True)
    assert limits.refusal("platform", "platform") is not None


def test_commands_the_platform_has_taken_are_not_limited() -> None:
    limits = CommandLimits(Clock())
    for _ in range(10 * SUPERVISOR_BURST):
        assert limits.refusal("platform", "platform") is None
        limits.taken("platform", "platform", refused=False)


def test_a_supervisor_is_limited_even_when_every_command_is_taken() -> None:
    clock = Clock()
    limits = CommandLimits(clock)
    for _ in range(SUPERVISOR_BURST):
        assert limits.refusal("alice", "supervisor") is None
        limits.taken("alice", "supervisor", refused=False)
    assert limits.refusal("alice", "supervisor") is not None
    # The same account as a platform is another budget.
    assert limits.refusal("alice", "platform") is None
    clock.now += 1 / SUPERVISOR_PER_S
    assert limits.refusal("alice", "supervisor") is None


def test_a_long_flood_costs_at_most_its_burst_and_the_steady_rate() -> None:
    clock = Clock()
    limits = CommandLimits(clock)
    taken = 0
    for _ in range(10_000):  # 10,000 refused commands over 100 s
        clock.now += 0.01
        if limits.refusal("platform", "platform") is None:
            limits.taken("platform", "platform", refused=True)
            taken += 1
    assert taken <= REFUSED_BURST + 100 * REFUSED_PER_S + 1


def test_many_accounts_do_not_grow_the_budgets_without_bound() -> None:
    clock = Clock()
    limits = CommandLimits(clock)
    for number in range(5000):
        limits.taken(f"account-{number}", "platform", refused=True)
        clock.now += 1.0
    assert len(limits._buckets) <= 1100


# -- reads: events and audit pages ----------------------------------------------------------


def test_an_account_has_a_few_pages_at_a_time_and_each_answer_frees_one() -> None:
    limits = ReadLimits(Clock())
    for _ in range(READS_AT_ONCE):
        assert limits.admit("eve", "viewer") is None
    why = limits.admit("eve", "viewer")
    assert why is not None and "eve" in why and "at a time" in why
    # Other accounts, and the same name under another role, keep their own.
    assert limits.admit("platform", "platform") is None
    assert limits.admit("eve", "supervisor") is None
    limits.done("eve", "viewer")
    assert limits.admit("eve", "viewer") is None


def test_a_pager_gets_a_burst_of_pages_then_a_steady_rate() -> None:
    clock = Clock()
    limits = ReadLimits(clock)
    for _ in range(READ_BURST):  # one page at a time, each answered before the next
        assert limits.admit("eve", "viewer") is None
        limits.done("eve", "viewer")
    why = limits.admit("eve", "viewer")
    assert why is not None and "send it again in" in why
    clock.now += 1.001 / READ_PER_S  # a hair more: the clock's float sum
    assert limits.admit("eve", "viewer") is None


def test_a_flood_of_pages_costs_at_most_its_burst_and_the_steady_rate() -> None:
    clock = Clock()
    limits = ReadLimits(clock)
    admitted = 0
    for _ in range(10_000):  # 10,000 pages over 10 s, each answered at once
        clock.now += 0.001
        if limits.admit("eve", "viewer") is None:
            limits.done("eve", "viewer")
            admitted += 1
    assert admitted <= READ_BURST + 10 * READ_PER_S + 1


def test_many_paging_accounts_do_not_grow_the_read_budgets_without_bound() -> None:
    clock = Clock()
    limits = ReadLimits(clock)
    for number in range(5000):
        assert limits.admit(f"account-{number}", "viewer") is None
        limits.done(f"account-{number}", "viewer")
        clock.now += 1.0
    assert len(limits._buckets) <= 1100 and not limits._open
