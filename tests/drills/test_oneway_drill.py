"""The one-way partition drill (`make drill-oneway`; not in `make test`).

Against the running testbed, over its WAN, with a producer (acks=all,
idempotent) and a group member in each broker DC, each a client of its
DC's network:

1. the first DC's packets to the second are dropped for CUT_S seconds, the
   reverse flowing (testbed/partition.sh oneway), then healed; the cluster
   must be whole again within WHOLE_S;
2. the same the other way round.

Throughout, the admin API is sampled every two seconds (testkit/soak/observe.py):
which controller leads the quorum, which brokers are fenced, each
partition's leader and ISR, and its high watermark; and the round trips
between the DCs are probed from the nodes once a second (testkit.drill.wan_probe:
a cut shows as unanswered probes). The soak's verifier
judges the clients' logs and a full read as each DC (nothing acknowledged
lost or reordered, no committed offset going back). The figures go to
reports/oneway-drill.json; docs/faults.md explains them.
"""

from __future__ import annotations

import json
import time
import uuid

from confluent_kafka.admin import AdminClient

from testkit.cluster import CLUSTER_DEFAULTS, REPO, create_topic
from testkit.drill import wan_probe
from testkit.soak import faults, observe, reader, verify
from testkit.soak.load import Clients
from testkit.soak.run import stop_sampler
from testkit.soak.schedule import Topology

REPORTS = REPO / "reports"
CUT_S = 60
WHOLE_S = 300
STEADY_S = 20


def test_a_one_way_cut_between_the_broker_dcs_loses_nothing_and_heals(cluster, tmp_path):
    REPORTS.mkdir(exist_ok=True)
    first, second = cluster.dcs
    topology = Topology.of(cluster)
    tb = faults.Testbed(cluster, topology, REPORTS / "oneway-drill")
    checks = []

    def check(name, passed, detail=""):
        checks.append({"check": name, "passed": bool(passed), "detail": str(detail)})
        print(f"{'PASS' if passed else 'FAIL'}  {name}: {detail}", flush=True)

    tb.partition("heal")
    before = tb.wait_healthy(WHOLE_S)
    assert before["passed"], f"the cluster is not whole before the drill: {before['problems']}"
    run_id = uuid.uuid4().hex[:10]
    topic = f"oneway-{run_id}"
    config = {"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config}
    create_topic(AdminClient(config), topic, 8, int(CLUSTER_DEFAULTS["kafka_replication_factor"]))
    racks = {n.node_id: n.dc for n in cluster.brokers}
    observer = observe.Observer(cluster, topic)
    probe = wan_probe()
    cuts = []
    with Clients(cluster, tmp_path, topic, run_id, rate=50, duration=3600) as clients:
        clients.wait_writing()
        observer.start()
        if probe:
            probe.start()
        try:
            time.sleep(STEADY_S)
            for fid, (a, b) in enumerate(((first, second), (second, first)), start=1):
                fault = faults.OneWay(f"{a}>{b}")
                cut = {"id": fid, "kind": "oneway", "target": fault.target, "in_model": True, "start": time.time()}
                cut["details"] = fault.inject(tb)
                cut["injected"] = time.time()
                time.sleep(CUT_S)
                cut["undo"] = time.time()
                fault.undo(tb)
                cut["end"] = time.time()
                cut["whole"] = tb.wait_healthy(WHOLE_S)
                cut["whole_at"] = time.time() if cut["whole"]["passed"] else None
                cuts.append(cut)
                check(f"{a}->{b} cut: the cluster is whole again within {WHOLE_S} s of the heal",
                      cut["whole"]["passed"], cut["whole"])  # fmt: skip
                time.sleep(STEADY_S)
        finally:
            tb.partition("heal")
            samples = observer.stop()
            wan_rtt = stop_sampler(probe)
            clients.stop()
    with (tmp_path / "faults.jsonl").open("w") as f:
        for cut in cuts:
            f.write(json.dumps({k: v for k, v in cut.items() if k != "whole"}) + "\n")
    for dc in cluster.dcs:
        reader.read_topic(cluster.bootstrap_servers, cluster.client_config, topic, run_id, dc,
                          tmp_path / f"read-{dc}.jsonl")  # fmt: skip
    judged = verify.verify(tmp_path, cluster.dcs)

    figures = {"cut_seconds": CUT_S, "cuts": {}, "wan_rtt": wan_rtt}
    for cut, row in zip(cuts, judged["faults"], strict=True):
        view = observe.summarize(samples, cut["injected"], cut["undo"], cut["whole_at"], racks)
        view.update(
            whole_again_after_heal_s=cut["whole"]["waited"],
            acked_while_cut_by_producer=row["acked_while_on_by_producer"],
            stall_by_producer_s=row["stall_by_producer"],
            partition_stall_s=row["partition_stall_s"],
        )
        figures["cuts"][cut["target"]] = view
        check(f"{cut['target']}: a quorum leader at every sample of the cut",
              view["quorum_unread_or_leaderless_samples"] == 0 and view["samples_during"] > 0,
              f"leaders {view['quorum_leaders_during']}, epochs {view['quorum_epochs_during']}")  # fmt: skip
        check(f"{cut['target']}: writes acknowledged in at least one DC while cut",
              any(n > 0 for n in (row["acked_while_on_by_producer"] or {}).values()),
              row["acked_while_on_by_producer"])  # fmt: skip
    for key in ("acked", "lost", "misplaced", "duplicates", "reordered", "divergent", "offset_regressions",
                "produce_errors", "unconfirmed", "latency_p99_ms", "latency_max_ms"):  # fmt: skip
        figures[key] = judged[key]
    check("nothing acknowledged lost, misplaced or reordered; the DCs' reads agree",
          judged["acked"] > 0 and not any(judged[k] for k in ("lost", "misplaced", "reordered", "divergent")),
          {k: judged[k] for k in ("acked", "lost", "misplaced", "reordered", "divergent")})  # fmt: skip
    check("no committed offset went back", judged["commits"] > 0 and judged["offset_regressions"] == 0,
          f"{judged['commits']} commits, {judged['offset_regression_examples']}")  # fmt: skip
    out = REPORTS / "oneway-drill.json"
    out.write_text(json.dumps({"figures": figures, "checks": checks, "verifier": judged, "samples": samples},
                              indent=2, default=str) + "\n")  # fmt: skip
    for target, view in figures["cuts"].items():
        print(
            f"{target}: quorum {view['quorum_leader_before']} -> {view['quorum_leaders_during']} -> "
            f"{view['quorum_leader_after']}; fenced {view['fenced_during']}; acked while cut "
            f"{view['acked_while_cut_by_producer']}; hw stuck on {view['partitions_whose_hw_did_not_move']}"
        )
    print(f"WAN round trips through the drill (unanswered: the cuts): {wan_rtt}")
    print(f"report: {out}")
    failed = [c for c in checks if not c["passed"]]
    if not failed:
        admin = AdminClient(config)  # held until the deletion's answer: a dropped client fails it with _DESTROY
        admin.delete_topics([topic])[topic].result(timeout=60)
    assert not failed, failed
