#!/usr/bin/env bash
# Downloads the wheels of the streaming job's Python packages
# (spark_stream_python_packages in roles/spark_stream/defaults) from PyPI into
# dist/wheels/, for the testbed's Spark hosts: they reach PyPI only through
# this machine's proxy, whose CA they do not trust, so roles/spark_stream
# installs from these (spark_stream_wheel_dir in examples/consumer/inventory). The nodes
# run Debian 12's Python 3.11 or Debian 13's 3.13, on x86_64.
set -euo pipefail
cd "$(dirname "$0")"

mapfile -t packages < <(sed -n '/^spark_stream_python_packages:$/,/^[^ ]/s/^  - \(.*\)$/\1/p' \
  ../roles/spark_stream/defaults/main.yml)
[ "${#packages[@]}" -gt 0 ] || { echo "fetch-wheels: cannot read spark_stream_python_packages" >&2; exit 1; }
pythons=(3.11 3.13)
stamp="dist/wheels/.$(printf '%s\n' "${packages[@]}" "${pythons[@]}" | sha256sum | cut -c1-16)"
[ -f "$stamp" ] && exit 0

rm -rf dist/wheels
mkdir -p dist/wheels
for python in "${pythons[@]}"; do
  ../.venv/bin/python -m pip download -q --only-binary=:all: --python-version "$python" \
    --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    -d dist/wheels "${packages[@]}"
done
touch "$stamp"
echo "fetch-wheels: $(ls dist/wheels | wc -l) wheels for ${packages[*]}"
