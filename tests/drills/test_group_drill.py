"""The active/active consumer group drill (`make drill-group`, and part of `make test`).

One consumer group (KIP-848, group.protocol=consumer) with two members in
each broker DC, each a client of its own DC (tests/dcnet.py) with
client.rack, reads the load harness's records (acks=all, idempotent):

1. both DCs' members consume, each from its own DC's replicas (the record
   bytes it fetched per broker, from librdkafka's statistics);
2. the second DC's members are killed (SIGKILL: no leave, like a crash); the
   group hands their partitions to the first DC's members within the
   session timeout, and they resume from the committed offsets;
3. the second DC's nodes are lost too (playbooks/dc_failover.yml) and the
   members go on reading; the DC comes back (dc_recovery.yml);
4. every acknowledged record was read by some member (at-least-once:
   records read twice across the handover are counted as duplicates).

Kafka 4.x's server-side assignors are not rack-aware (KAFKA-19909):
locality comes from follower fetching, whatever partitions a member gets.
The figures go to reports/group-drill.json.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from testkit.cluster import REPO, playbook, wait_until
from testkit.dcnet import DcClient
from testkit.drill import load_problems
from testkit.loadtest import verify
from testkit.loadtest.background import BackgroundLoad
from testkit.loadtest.verify import own_share

REPORTS = REPO / "reports"
# The broker's group.consumer.session.timeout.ms (45 s by default), and the
# heartbeats and the assignment's reconciliation around it.
TAKEOVER_BUDGET_SECONDS = 75


class Group:
    def __init__(self, cluster, workdir, config_file):
        self.cluster, self.workdir, self.config_file = cluster, Path(workdir), config_file
        self.name = f"loadtest-aa-{uuid.uuid4().hex[:8]}"
        self.members, self.dcs = {}, {}

    def start(self, member, client):
        out = self.workdir / member
        cmd = client.wrap(
            [sys.executable, "-m", "testkit.loadtest.member", "--bootstrap-servers", self.cluster.bootstrap_servers,
             "--topic", "load", "--group", self.name, "--rack", client.dc, "--out", str(out),
             "--client-config", str(self.config_file), "--duration", "1800"]
        )  # fmt: skip
        log = open(f"{out}.log", "w")  # noqa: SIM115 - the member's output, kept for the report
        self.members[member] = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        self.dcs[member] = client.dc

    def events(self):
        out = {}
        for member in self.members:
            path = self.workdir / f"{member}.events"
            lines = path.read_text().splitlines() if path.exists() else []
            out[member] = [json.loads(line) for line in lines if line.strip()]
        return out

    def owned(self, members=None):
        """{member: partitions owned now} of the members (default: all)."""
        events = self.events()
        return {m: verify.owned_at(verify.owned_over_time(events[m]), time.monotonic()) for m in members or events}

    def records(self, run_id):
        """{member: [(partition, seq)]} of the run's records each member read."""
        out = {}
        for member in self.members:
            path = self.workdir / f"{member}.records"
            rows = [line.split() for line in path.read_text().splitlines()] if path.exists() else []
            out[member] = [(int(p), int(seq)) for p, _, run, seq, _ in rows if run == run_id]
        return out

    def read_after(self, member, t):
        path = self.workdir / f"{member}.records"
        return sum(1 for line in path.read_text().splitlines() if float(line.split()[4]) > t)

    def own_dc_share(self, member):
        """The share of the record bytes the member fetched that came from brokers of its own DC."""
        fetched = json.loads((self.workdir / f"{member}.json").read_text())["fetched_bytes"]
        racks = {n.node_id: n.dc for n in self.cluster.brokers}
        return own_share({int(b): n for b, n in fetched.items()}, racks, self.dcs[member])

    def kill(self, members):
        for member in members:
            self.members[member].send_signal(signal.SIGKILL)
            self.members[member].wait(timeout=30)

    def stop(self):
        for process in self.members.values():
            if process.poll() is None:
                process.terminate()
        for process in self.members.values():
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()


def test_an_active_active_group_hands_a_lost_dcs_partitions_over_and_loses_nothing(cluster, tmp_path):
    REPORTS.mkdir(exist_ok=True)
    first, second = cluster.dcs
    checks, figures = [], {}

    def check(name, passed, detail=""):
        checks.append({"check": name, "passed": bool(passed), "detail": str(detail)})
        print(f"{'PASS' if passed else 'FAIL'}  {name}: {detail}", flush=True)

    config_file = cluster.client_config_file(tmp_path, "kafka-load")
    group = Group(cluster, tmp_path, config_file)
    (tmp_path / "load").mkdir()
    load = BackgroundLoad(
        cluster.bootstrap_servers, cluster.dcs, rate=100, workdir=tmp_path / "load", client_config_file=config_file
    )
    admin = cluster.admin()
    try:
        partitions = set(admin.topics()["load"]["partitions"])
    finally:
        admin.close()
    with DcClient(first) as near, DcClient(second) as far:
        try:
            for client in (near, far):
                for suffix in ("a", "b"):
                    group.start(f"{client.dc}-{suffix}", client)
            spread = wait_until(lambda: covers(group.owned(), partitions), timeout=90)
            check("every member owns partitions, and together all of them", spread, group.owned())
            load.start()
            time.sleep(20)
            before = {m: len(r) for m, r in group.records(load_run_id(load)).items()}
            check("both DCs' members consume", all(before.values()), before)

            dead = [m for m in group.members if group.dcs[m] == second]
            killed_at = time.monotonic()
            group.kill(dead)
            took = wait_until(
                # Until it is done, or found impossible: the dead members owned nothing to take over.
                lambda: (t := verify.takeover(group.events(), dead, killed_at))["seconds"] is not None or "why" in t,
                timeout=TAKEOVER_BUDGET_SECONDS + 30,
                interval=1,
            )
            handover = verify.takeover(group.events(), dead, killed_at)
            figures["takeover"] = handover
            check(
                f"{first}'s members own {second}'s partitions within {TAKEOVER_BUDGET_SECONDS} s",
                took and handover["seconds"] is not None and handover["seconds"] <= TAKEOVER_BUDGET_SECONDS,
                handover,
            )
            time.sleep(10)

            lost = playbook(cluster, "dc_failover", kafka_ops_failover_dc=second, log_dir=REPORTS / "group-drill")
            check(f"{second}'s nodes lost: dc_failover.yml passes", lost.ok, lost.log)
            lost_at = time.monotonic()
            time.sleep(30)
            survivors = [m for m in group.members if m not in dead]
            going_on = {m: group.read_after(m, lost_at) for m in survivors}
            check(f"with {second} lost, {first}'s members go on reading", all(going_on.values()), going_on)
            back = playbook(
                cluster, "dc_recovery", kafka_ops_failover_dc=second, kafka_ops_recovery_smoke_test=False,
                log_dir=REPORTS / "group-drill",
            )  # fmt: skip
            check(f"{second} back: dc_recovery.yml passes", back.ok, back.log)
        finally:
            load.stop()
            run_id = load.report()["run_id"]
            acked = [tuple(int(x) for x in line.split()) for line in load.acks_path.read_text().splitlines()]
            # The survivors read on until they have everything, or give up after 120 s.
            wait_until(lambda: verify.judge_group(acked, group.records(run_id))["lost"] == 0, timeout=120, interval=5)
            group.stop()

    result = verify.judge_group(acked, group.records(run_id))
    figures["group"] = result
    figures["own_dc_byte_share"] = {m: group.own_dc_share(m) for m in group.members}
    check("every member read from its own DC", all((s or 0) >= 0.99 for s in figures["own_dc_byte_share"].values()),
          figures["own_dc_byte_share"])  # fmt: skip
    check("no acknowledged record lost by the group", result["acknowledged"] > 0 and result["lost"] == 0, result)
    figures["load"] = load.report()
    problems = load_problems(figures["load"])
    check("every write of the load confirmed: none failed or unconfirmed, none lost by its DC readers", not problems,
          "; ".join(problems) or f"{figures['load']['acknowledged']} acknowledged")  # fmt: skip
    out = REPORTS / "group-drill.json"
    out.write_text(json.dumps({"figures": figures, "checks": checks}, indent=2) + "\n")
    print(f"group: {result}; takeover {figures['takeover']}; report {out}")
    failed = [c for c in checks if not c["passed"]]
    assert not failed, failed


def covers(owned, partitions):
    """Whether every member owns partitions and together they own all of them."""
    return all(owned.values()) and set().union(*owned.values()) == partitions


def load_run_id(load):
    """The harness's run id (written to its ready file once it writes)."""
    return load.ready_path.read_text().strip()
