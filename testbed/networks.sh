# Sourced by the testbed's network scripts (partition.sh, routing.sh).

# The subnet of DC $1's testbed network; exits 2 naming the DC when there is none.
subnet() {
    podman network inspect "stretch-$1" --format '{{range .Subnets}}{{.Subnet}}{{end}}' 2>/dev/null |
        grep . || { echo "${0##*/}: no testbed network for DC '$1'" >&2; exit 2; }
}
