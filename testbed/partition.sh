#!/bin/sh
# Cuts, or heals, the network between the testbed's DCs. All traffic between
# the DCs' podman networks is routed by this host, so one nftables table in
# its forward path is the cut. Needs root.
#   testbed/partition.sh cut dc1 dc2      both directions between dc1 and dc2
#   testbed/partition.sh oneway dc1 dc2   dc1's packets to dc2 dropped, dc2's to dc1 flowing
#   testbed/partition.sh isolate dc3      dc3 cut from every other DC
#   testbed/partition.sh heal
#   testbed/partition.sh counters         the packets each rule of the cut dropped, one line
#                                         each; "healed" when no cut is in place
# One cut at a time: each command replaces the one before. nft takes a rule
# that matches no packet (a wrong subnet, traffic that does not pass this
# host) and exits 0, so the soak takes a cut as in place only once its
# counters show it dropping the DCs' packets, and a heal only once
# `counters` says "healed" (testkit/soak/faults.py).
#
# Where the rules sit, and what they see:
# - The table's chain hooks forward at priority -10, before the filter
#   chains at priority 0, where iptables (nft-backed here) keeps the WAN's
#   NFQUEUE rules (chain STRETCH-WAN, jumped to from FORWARD). A drop there is
#   final, so a cut packet never reaches the delayer's queue. Packets queued
#   before the cut (at most one delay's worth, 15-20 ms) are let through when
#   their delay is up: a verdict resumes a packet after the hook that queued
#   it, not before.
# - Traffic between the DC networks keeps its real addresses (routing.sh
#   leaves it untracked, so netavark does not masquerade it): the forward
#   hook sees every packet with the addresses of both containers, in both
#   directions, so the rules match the DCs' own subnets.
# - The host's own traffic to a node (the tests' clients, podman exec, SSH) is
#   not forwarded, so no cut touches it.
set -eu

TABLE=stretch_partition

. "$(dirname "$0")/networks.sh"

# The table with these rules (one per line) in its forward chain, in place of any cut before.
apply() {
    nft delete table inet "$TABLE" 2>/dev/null || true
    nft -f - <<RULES
table inet $TABLE {
    chain forward {
        type filter hook forward priority -10; policy accept;
$1
    }
}
RULES
}

case "${1:-}" in
cut)
    [ $# -eq 3 ] || { echo "usage: $0 cut DC DC" >&2; exit 2; }
    a=$(subnet "$2")
    b=$(subnet "$3")
    apply "        ip saddr $a ip daddr $b counter drop
        ip saddr $b ip daddr $a counter drop"
    echo "cut $2 ($a) from $3 ($b)"
    ;;
oneway)
    [ $# -eq 3 ] || { echo "usage: $0 oneway FROM TO" >&2; exit 2; }
    a=$(subnet "$2")
    b=$(subnet "$3")
    apply "        ip saddr $a ip daddr $b counter drop"
    echo "cut $2 ($a) -> $3 ($b); $3 -> $2 flows"
    ;;
isolate)
    [ $# -eq 2 ] || { echo "usage: $0 isolate DC" >&2; exit 2; }
    a=$(subnet "$2")
    apply "        ip saddr $a ip daddr != $a counter drop
        ip daddr $a ip saddr != $a counter drop"
    echo "isolated $2 ($a) from every other DC"
    ;;
heal)
    nft delete table inet "$TABLE" 2>/dev/null || true
    echo "healed"
    ;;
counters)
    if ! nft list table inet "$TABLE" >/dev/null 2>&1; then
        nft list tables >/dev/null # an nft that cannot run fails here, loudly: no cut is not "healed" then
        echo "healed"
        exit 0
    fi
    nft list chain inet "$TABLE" forward | sed -n 's/.* counter packets \([0-9][0-9]*\) bytes .*/\1/p'
    ;;
*)
    echo "usage: $0 cut DC DC | oneway FROM TO | isolate DC | heal | counters" >&2
    exit 2
    ;;
esac
