#!/bin/sh
# Cuts, or heals, the network between two of the testbed's DCs. All traffic
# between the DCs' podman networks is routed by this host, so one nftables
# table in its forward path is the cut. Needs root.
#   testbed/partition.sh cut dc1 dc2
#   testbed/partition.sh heal
set -eu

subnet() {
    podman network inspect "stretch-$1" --format '{{range .Subnets}}{{.Subnet}}{{end}}' 2>/dev/null |
        grep . || { echo "partition.sh: no testbed network for DC '$1'" >&2; exit 2; }
}

case "${1:-}" in
cut)
    [ $# -eq 3 ] || { echo "usage: $0 cut DC DC" >&2; exit 2; }
    a=$(subnet "$2")
    b=$(subnet "$3")
    nft delete table inet stretch_partition 2>/dev/null || true
    nft -f - <<RULES
table inet stretch_partition {
    chain forward {
        type filter hook forward priority -10; policy accept;
        ip saddr $a ip daddr $b drop
        ip saddr $b ip daddr $a drop
    }
}
RULES
    echo "cut $2 ($a) from $3 ($b)"
    ;;
heal)
    nft delete table inet stretch_partition 2>/dev/null || true
    echo "healed"
    ;;
*)
    echo "usage: $0 cut DC DC | heal" >&2
    exit 2
    ;;
esac
