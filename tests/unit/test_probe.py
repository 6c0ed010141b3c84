"""Writable means acknowledged: the probe loop on an injected clock, and a transaction's bounded attempts."""

import time

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.probe import KafkaTransactionProbe, poll, until_answered


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_every_partition_is_probed_until_it_acknowledges_and_timed_from_the_loss():
    clock = Clock(1000.0)
    writable_at = {0: 1003.0, 1: 1007.5, 2: 1000.0}

    def send(p):
        clock.now += 0.1  # each write takes a tenth of a second
        return None if clock.now >= writable_at[p] else "KafkaTimeoutError: no leader"

    outcome = poll([0, 1, 2], send, since=998.0, timeout=60, interval=0.5, clock=clock, sleep=clock.sleep)
    assert outcome["pending"] == {}
    assert outcome["started_after"] == 2.0
    assert outcome["acked_after"][2] == 2.3
    assert 5.0 <= outcome["acked_after"][0] <= 5.6
    assert 9.5 <= outcome["every_partition_after"] <= 10.1


def test_a_partition_that_never_acknowledges_is_pending_with_its_last_reason():
    clock = Clock(0.0)

    def send(p):
        clock.now += 0.1
        return None if p == 0 else "NotLeaderForPartitionError"

    outcome = poll([0, 1], send, since=0.0, timeout=5, clock=clock, sleep=clock.sleep)
    assert outcome["pending"] == {1: "NotLeaderForPartitionError"}
    assert outcome["every_partition_after"] is None
    assert clock.now >= 5


def test_a_transaction_that_hangs_in_its_commit_is_given_up_and_tried_again():
    # kafka-python waits on a commit for good; a coordinator that cannot write __transaction_state keeps it there.
    txn = KafkaTransactionProbe.__new__(KafkaTransactionProbe)
    txn.attempt_timeout = 0.2
    txn._commit = lambda partition: time.sleep(3)
    started = time.monotonic()
    assert txn.send(0) == "no commit within 0.2 s"
    assert time.monotonic() - started < 1

    def refused(partition):
        raise RuntimeError("NotEnoughReplicasError")

    txn._commit = refused
    assert txn.send(0) == "RuntimeError: NotEnoughReplicasError"
    txn._commit = lambda partition: None
    assert txn.send(0) is None


def test_a_first_metadata_request_that_times_out_is_asked_again_within_the_wait():
    """What CI saw: the tiebreaker's failover failed on one 2 s metadata timeout of a 600 s wait."""
    clock = Clock(0.0)
    answers = iter([TimeoutError("Failed to update metadata after 2.0 secs."), TimeoutError("again"), [0, 1, 2]])

    def partitions():
        clock.now += 2.0  # each request runs to its bound
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    found, spent = until_answered(partitions, timeout=600, interval=0.5, clock=clock, sleep=clock.sleep)
    assert (found, spent) == ([0, 1, 2], 7.0)


def test_metadata_that_never_answers_fails_once_the_wait_is_over_naming_the_last_error():
    clock = Clock(0.0)

    def partitions():
        clock.now += 2.0
        raise TimeoutError("Failed to update metadata after 2.0 secs.")

    with pytest.raises(RuntimeError, match=r"TimeoutError: Failed to update metadata .*still failing after 12 s"):
        until_answered(partitions, timeout=10, interval=0.5, clock=clock, sleep=clock.sleep)
