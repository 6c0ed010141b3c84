#!/usr/bin/env bash
# Prepares this machine to run the local testbed: OS packages, podman's
# runtime settings, and the Python virtualenv. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

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

# The pinned tools, then the project's own package (stretch), editable.
if [ ! -x .venv/bin/ansible-playbook ] || [ requirements.txt -nt .venv/.installed ] || [ pyproject.toml -nt .venv/.installed ]; then
  python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r requirements.txt
  .venv/bin/pip install -q -e .
  touch .venv/.installed
fi

# ansible-test sanity (make lint) runs most of its tests in virtualenvs of
# their own (~/.ansible/test/venv), bootstrapped with a get-pip.py it fetches
# from outside the package index unless its cache holds one: ours, from
# ensurepip. The virtualenvs are made here, from the package index, once;
# every later `make lint` uses them without the network.
pip_version=$(.venv/bin/python -c 'import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="3.11"))["pip"])')
get_pip=~/.ansible/test/cache/get_pip_${pip_version//./_}.py
cmp -s testbed/ansible-test-get-pip.py "$get_pip" || install -D -m 0644 testbed/ansible-test-get-pip.py "$get_pip"
(PATH="$PWD/.venv/bin:$PATH" && cd collections/ansible_collections/stretch/kafka &&
  ansible-test sanity --prime-venvs --python 3.11 --local)

# promtool (the alert rules' tests), prometheus and its blackbox exporter
# (the live alert check, and its TLS probe of the certificates), from
# Debian's packages, unpacked into the virtualenv rather than installed:
# installing them would start their services on this host.
if [ ! -x .venv/bin/promtool ] || [ ! -x .venv/bin/prometheus ] || [ ! -x .venv/bin/prometheus-blackbox-exporter ]; then
  tmp=$(mktemp -d)
  packages="prometheus prometheus-blackbox-exporter"
  # shellcheck disable=SC2086  # two package names
  (cd "$tmp" && { apt-get download -qq $packages 2>/dev/null ||
    { apt-get update -qq && apt-get download -qq $packages 2>/dev/null; }; })
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/unpacked"; done
  install -m 0755 "$tmp/unpacked/usr/bin/promtool" "$tmp/unpacked/usr/bin/prometheus" \
    "$tmp/unpacked/usr/bin/prometheus-blackbox-exporter" .venv/bin/
  rm -rf "$tmp"
fi
