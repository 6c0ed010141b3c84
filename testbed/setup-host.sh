#!/usr/bin/env bash
# Prepares this machine to run the local testbed: OS packages, podman's
# runtime settings, and the Python virtualenv. Safe to run again.
#   testbed/setup-host.sh [os|python]   one part (default: both, in that order)
# The node images and the Maven steps need only the first, so `make` runs
# them beside the second (the virtualenv's install).
set -euo pipefail
cd "$(dirname "$0")/.."

os_part() {
  # iptables and libnetfilter-queue: the WAN's delayer (NFQUEUE; NetfilterQueue is built against them).
  packages=(podman runc debootstrap nftables iptables libnetfilter-queue-dev gcc python3-dev
            openjdk-17-jdk-headless maven python3-venv make)
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi

  # crun cannot run on this kernel's hybrid cgroups, and the hard open-files
  # limit is 20000: podman's defaults fail on both counts.
  conf=/etc/containers/containers.conf.d/50-stretch-kafka.conf
  if [ ! -f "$conf" ]; then
    mkdir -p "$(dirname "$conf")"
    cat >"$conf" <<'CONF'
[engine]
runtime = "runc"

[containers]
default_ulimits = ["nofile=10000:20000", "nproc=4096:4096"]
CONF
  fi
}

python_part() {
  # The pinned tools, then the project's own packages, editable: its tools
  # (testkit), the kafka-group source, the smoke test and the cluster's
  # exporter (packages/).
  packages=(packages/kafka-group-source packages/kafka-smoke packages/stretch-exporter .)
  stale=false
  for project in "${packages[@]}"; do
    [ "$project/pyproject.toml" -nt .venv/.installed ] && stale=true
  done
  if [ ! -x .venv/bin/ansible-playbook ] || [ requirements.txt -nt .venv/.installed ] || $stale; then
    python3 -m venv .venv
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -r requirements.txt
    # Their dependencies are pinned in requirements.txt.
    .venv/bin/pip install -q --no-deps -e packages/kafka-group-source -e packages/kafka-smoke \
      -e packages/stretch-exporter -e .
    touch .venv/.installed
  fi
}

case "${1:-all}" in
  os) os_part ;;
  python) python_part ;;
  all) os_part; python_part ;;
  *) echo "setup-host: unknown part '$1' (os, python)" >&2; exit 2 ;;
esac
