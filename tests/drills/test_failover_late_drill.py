"""The DC failover timed from Kafka's record however late the run (`make drill-failover-late`, outside `make test`).

The main failover drill runs the playbook 15 s after the loss with the
quorum's leader moved out of the lost DC first: the quorum's leader then
lists the lost brokers' last fetches, and the outage is exact. These are the
two cases that hide a run timed from its own clock:

1. the playbook run more than 300 s after the loss: the quorum's leader has
   dropped the lost brokers from its DescribeQuorum reply (its observer
   session timeout);
2. the quorum's leader in the lost DC: the leader elected after the loss
   never had the lost brokers' fetches.

In both, the playbook must prove the cluster writable, print no figure timed
from its own run, and give the outage as a least value from Kafka's record:
the metadata log's first fencing of the DC's brokers, which must come after
the kill and within the broker session timeout of it, and its end (the last
fencing) must be the kill's plus about that timeout. Then the DC is
recovered. About 20 minutes against the running testbed, without load;
figures to reports/failover-late-drill.json.
"""

from __future__ import annotations

import json

import pytest

from tests.drills.test_failover_drill import REPORTS, Drill

# More than the quorum leader's observer session timeout (300 s, LeaderState).
LATE_SECONDS = 330
# Kafka fences a killed broker broker.session.timeout.ms after its last heartbeat: 9 s by default, 6 s with the
# roles' WAN defaults; the bounds below give it a few seconds more for a loaded host.
SESSION_SLACK = 20


def judge(drill, run, case):
    """The checks both cases share, from the run's Kafka record of the outage."""
    failover = run.stats.get("kafka_failover", {}) if run.output is not None else {}
    record = run.stats.get("kafka_failover_record", {}) if run.output is not None else {}
    drill.figures[case] = {"kafka_failover": failover, "kafka_failover_record": record,
                           "killed_at": drill.killed_at}  # fmt: skip
    drill.check(f"{case}: the quorum's leader gave no exact start", failover.get("lost_since") in (None, ""), failover)
    down_by = record.get("down_by")
    drill.check(
        f"{case}: Kafka's record bounds the start after the kill, within the session timeout of it",
        down_by not in (None, "") and 0 <= float(down_by) - drill.killed_at <= SESSION_SLACK,
        f"down by {down_by}, the kill {drill.killed_at:.2f}",
    )
    at = record.get("writable_at")
    drill.check(
        f"{case}: Kafka's record of the end (its brokers fenced) is within the session timeout of the kill",
        at not in (None, "") and 0 <= float(at) - drill.killed_at <= SESSION_SLACK,
        f"writable at {at}, the kill {drill.killed_at:.2f}; {record.get('problems')}",
    )
    drill.check(
        f"{case}: the playbook prints the outage as a least value from Kafka's record, with no exact figure",
        record.get("writable_after_seconds") in (None, "")
        and record.get("writable_after_at_least_seconds") not in (None, "")
        and "could resume at least" in run.text,
        record,
    )


def lose_and_recover(cluster, hosts, name, case, **lose):
    """The second broker DC lost as lose says, the playbook's record of it judged, then the DC recovered."""
    drill = Drill(cluster, hosts, load=None)
    run = drill.lose_before_the_run(drill.second, **lose)
    judge(drill, run, case.format(dc=drill.second))
    back = drill.playbook("dc_recovery", kafka_ops_failover_dc=drill.second, kafka_ops_recovery_smoke_test=False)
    drill.check(f"{drill.second} back: dc_recovery.yml passes", back.ok, back.log)
    REPORTS.mkdir(exist_ok=True)
    out = REPORTS / "failover-late-drill.json"
    report = json.loads(out.read_text()) if out.exists() else {}
    report[name] = {"figures": drill.figures, "checks": drill.checks}
    out.write_text(json.dumps(report, indent=2, default=str))
    failed = [c for c in drill.checks if not c["passed"]]
    assert not failed, failed


@pytest.mark.outside_ci
def test_a_run_more_than_300_s_after_the_loss_bounds_the_outage_by_kafkas_fencing_record(cluster, hosts):
    lose_and_recover(cluster, hosts, "late", f"{{dc}} lost {LATE_SECONDS} s before the run", wait=LATE_SECONDS)


@pytest.mark.outside_ci
def test_a_loss_of_the_dc_that_held_the_quorums_leader_bounds_the_outage_by_kafkas_fencing_record(cluster, hosts):
    lose_and_recover(cluster, hosts, "leader_lost", "{dc} lost with the quorum's leader", leader_inside=True)
