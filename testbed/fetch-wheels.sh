#!/usr/bin/env bash
# Downloads the wheels of the Python packages the streaming jobs, the smoke
# test and the cluster's exporter need (spark_stream_python_packages,
# kafka_smoke_python_packages, kafka_monitoring_python_packages in the roles'
# defaults), but the project's own (testbed/build-wheels.sh builds those),
# from PyPI into dist/wheels/, for the testbed's Spark hosts, the smoke test's
# runner and the Prometheus host: the nodes reach PyPI only through this
# machine's proxy, whose CA they do not trust, so the roles install from these
# (spark_stream_wheel_dir, kafka_smoke_wheel_dir, kafka_monitoring_wheel_dir in
# examples/consumer/inventory).
# The nodes run Debian 12's Python 3.11 or Debian 13's 3.13, on x86_64; this
# machine runs 3.11.
set -euo pipefail
cd "$(dirname "$0")"

# The project's own packages (packages/*) are built here, not downloaded (testbed/build-wheels.sh).
own=$(sed -n 's/^name = "\(.*\)"$/\1==/p' ../packages/*/pyproject.toml)
mapfile -t packages < <(sed -n '/^\(spark_stream\|kafka_smoke\|kafka_monitoring\)_python_packages:$/,/^[^ ]/s/^  - \(.*\)$/\1/p' \
  ../roles/spark_stream/defaults/main.yml ../roles/kafka_smoke/defaults/main.yml ../roles/kafka_monitoring/defaults/main.yml |
  grep -v -F "$own" | sort -u)
[ "${#packages[@]}" -gt 0 ] || { echo "fetch-wheels: cannot read the roles' *_python_packages" >&2; exit 1; }
pythons=(3.11 3.13)
stamp="dist/wheels/.$(printf '%s\n' "${packages[@]}" "${pythons[@]}" | sha256sum | cut -c1-16)"
[ -f "$stamp" ] && exit 0

# What this script downloaded before goes (with its stamp); the project's own wheels stay.
mkdir -p dist/wheels
wheel_names=$(sed -n 's/^name = "\(.*\)"$/\1/p' ../packages/*/pyproject.toml | tr - _)
for old in dist/wheels/*.whl dist/wheels/.[0-9a-f]*; do
  [ -e "$old" ] || continue
  grep -qx -F "$(basename "$old" | cut -d- -f1)" <<<"$wheel_names" || rm -f "$old"
done
for python in "${pythons[@]}"; do
  ../.venv/bin/python -m pip download -q --only-binary=:all: --python-version "$python" \
    --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    -d dist/wheels "${packages[@]}"
done
touch "$stamp"
echo "fetch-wheels: $(ls dist/wheels | wc -l) wheels for ${packages[*]}"
