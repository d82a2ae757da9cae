"""The per-account budgets of table commands (controller.service.request_limits), on a clock
the test moves: a burst, then a steady rate; refused commands and supervisor commands each
counted."""

from __future__ import annotations

from controller.service.request_limits import (
    REFUSED_BURST,
    REFUSED_PER_S,
    SUPERVISOR_BURST,
    SUPERVISOR_PER_S,
    CommandLimits,
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
