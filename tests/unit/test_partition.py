"""testbed/partition.sh: the rules each cut puts in the host's forward path, read from stand-ins for podman and nft."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUBNETS = {"dc1": "10.91.1.0/24", "dc2": "10.91.2.0/24", "dc3": "10.91.3.0/24"}


# What nft lists of a cut's chain once packets went through it.
LISTING = """table inet stretch_partition {
\tchain forward {
\t\ttype filter hook forward priority -10; policy accept;
\t\tip saddr 10.91.1.0/24 ip daddr 10.91.2.0/24 counter packets 1234 bytes 99000 drop
\t\tip saddr 10.91.2.0/24 ip daddr 10.91.1.0/24 counter packets 0 bytes 0 drop
\t}
}
"""


@pytest.fixture
def host(tmp_path):
    """A PATH whose podman answers each DC's subnet and whose nft records what it is given, changing nothing; it
    lists the table (LISTING) when tmp_path/listing holds it, and has none otherwise."""
    bin_dir, log, listing = tmp_path / "bin", tmp_path / "nft.log", tmp_path / "listing"
    bin_dir.mkdir()
    cases = "\n".join(f'    stretch-{dc}) echo "{net}" ;;' for dc, net in SUBNETS.items())
    (bin_dir / "podman").write_text(f'#!/bin/sh\ncase "$3" in\n{cases}\n    *) exit 125 ;;\nesac\n')
    (bin_dir / "nft").write_text(f"""#!/bin/sh
echo "nft $*" >> {log}
if [ "$1" = -f ]; then cat >> {log}; fi
if [ "$1 $2" = "list tables" ]; then exit 0; fi
if [ "$1" = list ]; then
    [ -f {listing} ] || {{ echo "Error: No such file or directory" >&2; exit 1; }}
    cat {listing}
fi
""")
    for tool in ("podman", "nft"):
        (bin_dir / tool).chmod(0o755)

    def run(*args):
        env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
        proc = subprocess.run([str(REPO / "testbed/partition.sh"), *args], capture_output=True, text=True, env=env)
        return proc, log.read_text() if log.exists() else ""

    return run


def rules(nft_log):
    """The drop rules of the last table loaded."""
    loaded = nft_log.rsplit("nft -f -", 1)[-1]
    return [line.strip() for line in loaded.splitlines() if line.strip().endswith("drop")]


def test_a_cut_drops_both_directions_between_the_two_dcs_only(host):
    proc, log = host("cut", "dc1", "dc2")
    assert proc.returncode == 0, proc.stderr
    assert rules(log) == [
        "ip saddr 10.91.1.0/24 ip daddr 10.91.2.0/24 counter drop",
        "ip saddr 10.91.2.0/24 ip daddr 10.91.1.0/24 counter drop",
    ]


def test_a_one_way_cut_drops_only_the_first_dcs_packets_to_the_second(host):
    proc, log = host("oneway", "dc2", "dc1")
    assert proc.returncode == 0, proc.stderr
    assert rules(log) == ["ip saddr 10.91.2.0/24 ip daddr 10.91.1.0/24 counter drop"]
    assert "dc1 -> dc2 flows" in proc.stdout


def test_isolating_a_dc_drops_what_it_sends_to_and_gets_from_any_other_network(host):
    proc, log = host("isolate", "dc3")
    assert proc.returncode == 0, proc.stderr
    assert rules(log) == [
        "ip saddr 10.91.3.0/24 ip daddr != 10.91.3.0/24 counter drop",
        "ip daddr 10.91.3.0/24 ip saddr != 10.91.3.0/24 counter drop",
    ]


def test_the_rules_run_in_the_forward_hook_before_the_filter_chains_that_queue_the_wan(host):
    """The WAN's NFQUEUE rules are iptables rules at the filter priority (0): a drop must come first."""
    _, log = host("oneway", "dc1", "dc2")
    assert "type filter hook forward priority -10; policy accept;" in log


def test_each_cut_replaces_the_one_before_and_heal_removes_it(host):
    _, log = host("cut", "dc1", "dc2")
    _, log = host("oneway", "dc1", "dc2")
    assert log.count("nft delete table inet stretch_partition") == 2
    assert rules(log) == ["ip saddr 10.91.1.0/24 ip daddr 10.91.2.0/24 counter drop"]
    proc, log = host("heal")
    assert proc.returncode == 0
    assert log.count("nft delete table inet stretch_partition") == 3
    assert log.rstrip().endswith("nft delete table inet stretch_partition")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("oneway", "dc1"), "usage"),
        (("isolate",), "usage"),
        (("cut", "dc1", "dc9"), "no testbed network for DC 'dc9'"),
        (("sever", "dc1", "dc2"), "usage"),
    ],
)
def test_a_bad_request_is_refused_before_any_rule_changes(host, args, message):
    proc, log = host(*args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "-f" not in log


def test_the_counters_say_how_many_packets_each_rule_of_the_cut_dropped(host, tmp_path):
    # A cut is taken as in place only once its rules are seen dropping packets (testkit/soak/faults.py): a rule
    # that matches nothing passes nft as well.
    (tmp_path / "listing").write_text(LISTING)
    proc, _ = host("counters")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1234", "0"]


def test_the_counters_say_healed_when_no_cut_is_in_place(host):
    proc, _ = host("counters")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "healed"
