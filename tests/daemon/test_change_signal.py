"""The publisher's wake-up (controller.service.publishing.ChangeSignal): a change notified while the
publisher was busy sending is not lost until its next timeout."""

from __future__ import annotations

import threading

from controller.service.publishing import ChangeSignal


def test_a_notification_with_no_waiter_is_kept_for_the_next_wait() -> None:
    lock = threading.Lock()
    signal = ChangeSignal(lock)
    with signal:
        signal.notify_all()
    with signal:
        assert signal.wait(60.0) is True  # at once: the change came while no one waited
    with signal:
        assert signal.wait(0.01) is False  # consumed: nothing new since


def test_a_waiting_thread_is_woken_and_sees_the_signal() -> None:
    lock = threading.Lock()
    signal = ChangeSignal(lock)
    woke: list[bool] = []
    waiting = threading.Event()

    def waiter() -> None:
        with signal:
            waiting.set()
            woke.append(signal.wait(60.0))

    thread = threading.Thread(target=waiter)
    thread.start()
    assert waiting.wait(10)
    with signal:  # the waiter holds the lock until it waits, so this notify reaches it
        signal.notify_all()
    thread.join(10)
    assert woke == [True]
