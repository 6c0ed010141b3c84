"""Certificate rotation under load (`make drill-rotate`, about 20 minutes).

Against the running testbed, with the load harness writing (acks=all,
idempotent) and reading as each broker DC, playbooks/rotate_certificates.yml
runs each step; every step restarts every node one at a time behind the
gates (controllers first, the quorum leader last, then the brokers).

- leaves (`make drill-rotate`): every node's and the admin's key and
  certificate made again, same CA; each node then presents a new certificate.
- the CA, in three steps: ca-begin (a new CA, trusted
  beside the current one), ca-reissue (every certificate signed by the new
  CA), ca-finish (the old CA trusted no more). Clients trust what they
  trusted when they started, as real ones do: the first load trusts only the
  old CA and runs through ca-begin; then, as an operator gives the clients
  the bundle of both CAs, a second load starts with it and runs through
  ca-reissue and ca-finish. Afterwards every node presents a certificate of
  the new CA, a client that trusts only the old CA refuses the nodes, the
  old CA's admin certificate is refused, and a converge changes nothing.

No acknowledged record may be lost or reordered in any load. Figures (wall
time of each step, produce latency, the longest write stall) go to
reports/rotation-drill.json.
"""

from __future__ import annotations

import shutil
import ssl
from pathlib import Path

import pytest

from testkit.cluster import REPO, assert_restart_order, playbook, quorum_leader
from testkit.drill import Load, recorded
from testkit.leaks import leaks
from testkit.tls import context, peer_certificate, tls_exchange

REPORTS = REPO / "reports"


@pytest.fixture
def pki(cluster, tmp_path):
    """kafka_tls_pki_dir on this machine, and a copy of its CA and admin files as they were before the test."""
    pki = Path(cluster.admin_config["ssl_cafile"]).parent
    if (pki / "rotation").exists():
        pytest.fail(f"a CA rotation is already under way ({pki / 'rotation'}); finish it first")
    old = tmp_path / "old"
    old.mkdir()
    for name in ("ca.crt", "admin.crt", "admin.key"):
        shutil.copy2(pki / name, old / name)
    return pki, old


@pytest.fixture
def figures():
    """What the drill measured, merged into reports/rotation-drill.json by step."""
    with recorded(REPORTS / "rotation-drill.json") as found:
        yield found


def presented(cluster, ca, admin):
    """The certificate each node presents: a controller on its listener (with the admin's), a broker to clients."""
    listening = [(n, cluster.controller_port) for n in cluster.controllers]
    listening += [(n, cluster.client_port) for n in cluster.brokers if n not in cluster.controllers]
    return {n.host: peer_certificate(n.address, port, context(ca, *admin)) for n, port in listening}


def rotate(cluster, step, figures):
    """Run one step; every node restarts, controllers first and the quorum leader last, then the brokers."""
    leader = quorum_leader(cluster)
    # At full verbosity with diffs: the step makes new keys, and none of them may show.
    run = playbook(
        cluster, "rotate_certificates", "-vvvv", "--diff", log_dir=REPORTS / "rotation-drill", kafka_tls_rotate=step
    )
    assert run.ok, f"rotation step {step} failed; see {run.log}"
    found = leaks(run.stdout + run.stderr, cluster.secrets(), cluster.private_key_files())
    assert found == [], f"rotation step {step} printed secrets (see {run.log}): {found}"
    order = [g["host"] for g in run.stats.get("kafka_restarts", [])]
    figures["steps"].append({"step": step, "wall_seconds": run.seconds, "restarted": order})
    print(f"rotation {step}: {run.seconds} s, restarted {', '.join(order)}", flush=True)
    assert_restart_order(cluster, order, leader)


def test_the_leaves_rotate_under_load_without_losing_a_record(cluster, pki, figures, tmp_path):
    pki, old = pki
    before = presented(cluster, old / "ca.crt", (old / "admin.crt", old / "admin.key"))
    with Load(cluster, tmp_path / "leaves", "leaves", figures):
        rotate(cluster, "leaves", figures)
    after = presented(cluster, pki / "ca.crt", (pki / "admin.crt", pki / "admin.key"))
    assert (pki / "ca.crt").read_bytes() == (old / "ca.crt").read_bytes(), "leaves changed the CA"
    assert [h for h in before if after[h] == before[h]] == [], "nodes still presenting the old certificate"
    assert (pki / "admin.crt").read_bytes() != (old / "admin.crt").read_bytes(), "the admin kept its certificate"


def test_the_ca_rotates_under_load_without_losing_a_record(cluster, pki, figures, tmp_path):
    pki, old = pki
    with Load(cluster, tmp_path / "old-ca", "ca-begin", figures):
        rotate(cluster, "ca-begin", figures)
    with Load(cluster, tmp_path / "both-cas", "ca-reissue, ca-finish", figures):
        rotate(cluster, "ca-reissue", figures)
        rotate(cluster, "ca-finish", figures)

    new_ca, admin, old_admin = (
        pki / "ca.crt",
        (pki / "admin.crt", pki / "admin.key"),
        (old / "admin.crt", old / "admin.key"),
    )
    assert new_ca.read_bytes() != (old / "ca.crt").read_bytes(), "the CA is still the old one"
    assert not (pki / "rotation").exists(), "the rotation is still recorded as under way"
    # Every node answers a client that trusts only the new CA (the handshake verifies the chain) ...
    assert set(presented(cluster, new_ca, admin)) == {n.host for n in cluster.nodes}
    controller = cluster.controllers[0]
    # ... and is refused by a client that trusts only the old one,
    with pytest.raises(ssl.SSLCertVerificationError):
        tls_exchange(controller.address, cluster.controller_port, context(old / "ca.crt", *admin))
    # while the old CA's admin certificate is refused, where the new one is answered.
    with pytest.raises(ssl.SSLError, match="CERTIFICATE_UNKNOWN"):
        tls_exchange(controller.address, cluster.controller_port, context(new_ca, *old_admin))
    assert tls_exchange(controller.address, cluster.controller_port, context(new_ca, *admin)) == 7

    converge = playbook(cluster, "site", log_dir=REPORTS / "rotation-drill")
    assert converge.ok, converge.log
    assert converge.changed == 0, f"a converge after the rotation changed {converge.recap}"
