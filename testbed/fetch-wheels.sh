#!/usr/bin/env bash
# Fills the testbed's wheelhouse, dist/wheels/, with the third-party Python
# packages the streaming jobs, the smoke test and the cluster's exporter need
# (spark_stream_python_packages, kafka_smoke_python_packages,
# kafka_monitoring_python_packages in the roles' defaults), from PyPI, as an
# operator whose hosts reach no index fills one: the nodes reach PyPI only
# through this machine's proxy, whose CA they do not trust, so the roles
# install from these (testbed_wheelhouse in examples/consumer/inventory). The
# project's own packages are not here: they ship in the collection
# (release/build-collection.sh).
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
# No wheel of the project's own packages (an earlier checkout built them here): they ship in the collection.
for own in $(sed -n 's/^name = "\(.*\)"$/\1/p' ../packages/*/pyproject.toml | tr - _); do rm -f "dist/wheels/$own"-*.whl; done
[ -f "$stamp" ] && exit 0

# What this script downloaded before goes, with its stamp, and any wheel of the project's own packages an
# earlier checkout built here: the wheelhouse holds third-party packages only.
mkdir -p dist/wheels
rm -f dist/wheels/*.whl dist/wheels/.[0-9a-f]*
for python in "${pythons[@]}"; do
  ../.venv/bin/python -m pip download -q --only-binary=:all: --python-version "$python" \
    --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    -d dist/wheels "${packages[@]}"
done
touch "$stamp"
echo "fetch-wheels: $(ls dist/wheels | wc -l) wheels for ${packages[*]}"
