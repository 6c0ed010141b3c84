"""The background samplers of the tests and drills: they sample until stopped, and a failed sample fails stop()."""

import threading

import pytest

from testkit.periodic import Periodic


class Counter(Periodic):
    what = "counting"

    def __init__(self, fail_at=None):
        super().__init__(interval=0.01, join_timeout=5)
        self.count, self.fail_at, self.counted = 0, fail_at, threading.Event()

    def sample(self):
        self.count += 1
        if self.count == self.fail_at:
            raise OSError("the counter's source went away")
        if self.count >= 3:
            self.counted.set()


def test_it_samples_at_once_and_again_until_stopped():
    counter = Counter()
    counter.start()
    assert counter.counted.wait(5)
    assert counter.stop() is counter
    stopped_at = counter.count
    assert not counter.is_alive()
    assert counter.count == stopped_at >= 3


def test_a_failed_sample_fails_stop_in_the_callers_thread():
    counter = Counter(fail_at=2)
    counter.start()
    counter.join(5)
    assert not counter.is_alive(), "a failed sample ends the thread"
    with pytest.raises(RuntimeError, match="counting failed: the counter's source went away"):
        counter.stop()
