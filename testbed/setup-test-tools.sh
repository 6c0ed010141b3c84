#!/usr/bin/env bash
# What only the tests need on this machine, beside what setup-host.sh installs:
# the test and lint tools (requirements-test.txt), ansible-test's bootstrap for
# the collection's sanity tests, and Prometheus's tools for the alert rules. `make test` runs it; the demo does
# not need it. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# The test and lint tools, into the virtualenv setup-host.sh made.
if [ ! -f .venv/.installed-test ] || [ requirements-test.txt -nt .venv/.installed-test ] ||
   [ requirements.txt -nt .venv/.installed-test ]; then
  .venv/bin/pip install -q -r requirements-test.txt
  touch .venv/.installed-test
fi

# ansible-test sanity (make sanity) runs most of its tests in virtualenvs of
# their own (~/.ansible/test/venv), made on its first run from the package
# index and bootstrapped with a get-pip.py it would fetch from outside the
# index unless its cache holds one: ours, from ensurepip.
pip_version=$(.venv/bin/python -c 'import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="3.11"))["pip"])')
get_pip=~/.ansible/test/cache/get_pip_${pip_version//./_}.py
cmp -s testbed/ansible-test-get-pip.py "$get_pip" || install -D -m 0644 testbed/ansible-test-get-pip.py "$get_pip"

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
