#!/bin/sh
# The testbed's DCs reach each other with their own addresses, as a WAN's
# sites do: a broker sees a client of another DC at the client's address.
#
#   testbed/routing.sh apply DC...    prints {"changed": true|false}
#   testbed/routing.sh remove         prints {"changed": true|false}
#
# netavark masquerades whatever leaves a DC network for another subnet, so
# without this a node in dc2 sees every dc1 client as dc2's own bridge
# gateway (10.91.2.1): a group member in dc1 whose coordinator is in dc2
# would count as dc2's on the dashboard, and a broker's logs and request
# metrics would name the gateway. Traffic between two DC subnets is left
# untracked (the raw prerouting hook, before conntrack), and only tracked
# traffic is NATed; the host routes it between the bridges, and netavark's
# forward rules accept it by source subnet. The WAN's delay (NFQUEUE, in
# forward) and partition.sh's cuts match the same real addresses as before.
# Traffic to anywhere else keeps its masquerade.
set -eu

TABLE=stretch_routing

. "$(dirname "$0")/networks.sh"

case "${1:-}" in
apply)
    shift
    [ $# -ge 2 ] || { echo "routing.sh apply: name two DCs or more" >&2; exit 2; }
    nets=""
    for dc in "$@"; do nets="$nets $(subnet "$dc")"; done
    rules=""
    for from in $nets; do
        for to in $nets; do
            [ "$from" = "$to" ] || rules="$rules
        ip saddr $from ip daddr $to notrack"
        done
    done
    wanted=$(printf '%s\n' "$rules" | sed 's/^ *//' | grep . | sort)
    have=$(nft list table inet "$TABLE" 2>/dev/null | grep notrack | sed 's/^[[:space:]]*//' | sort || true)
    if [ "$wanted" = "$have" ]; then
        echo '{"changed": false}'
        exit 0
    fi
    nft delete table inet "$TABLE" 2>/dev/null || true
    nft -f - <<RULES
table inet $TABLE {
    chain prerouting {
        type filter hook prerouting priority raw; policy accept;$rules
    }
}
RULES
    echo '{"changed": true}'
    ;;
remove)
    if nft list table inet "$TABLE" >/dev/null 2>&1; then
        nft delete table inet "$TABLE"
        echo '{"changed": true}'
    else
        echo '{"changed": false}'
    fi
    ;;
*)
    echo "usage: routing.sh apply DC... | remove" >&2
    exit 2
    ;;
esac
