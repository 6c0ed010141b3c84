#!/usr/bin/env bash
# Builds the wheels of the project's own Python packages (packages/*: the
# kafka-group source, the smoke test and the cluster's exporter) into
# dist/wheels, beside the ones testbed/fetch-wheels.sh downloads:
# roles/spark_stream installs them on the Spark hosts, roles/kafka_smoke on
# the smoke test's runner and roles/kafka_monitoring on the Prometheus host
# from there (spark_stream_wheel_dir, kafka_smoke_wheel_dir,
# kafka_monitoring_wheel_dir), as an operator's roles install them from a
# wheel directory or a package index. Pure Python: one wheel serves the
# nodes' Python 3.11 and 3.13. Rebuilt only when a source is newer than the
# wheel, and byte for byte the same from the same sources (SOURCE_DATE_EPOCH),
# so a rebuild changes no host.
set -euo pipefail
cd "$(dirname "$0")"
# WHEEL_DIR: another directory to build them into (a check of the build that leaves dist/ alone).
out=${WHEEL_DIR:-dist/wheels}
mkdir -p "$out"

for project in ../packages/*/; do
  name=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$project/pyproject.toml")
  version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$project/pyproject.toml")
  [ -n "$name" ] && [ -n "$version" ] || { echo "build-wheels: no name or version in $project/pyproject.toml" >&2; exit 1; }
  wheel="$out/${name//-/_}-${version}-py3-none-any.whl"
  if [ -f "$wheel" ] && [ -z "$(find "$project/pyproject.toml" "$project/README.md" "$project/src" -newer "$wheel" \
      -not -name '*.pyc' -not -path '*/__pycache__*' -not -path '*.egg-info*' | head -1)" ]; then
    continue
  fi
  rm -f "$wheel"
  SOURCE_DATE_EPOCH=315532800 ../.venv/bin/python -m pip wheel -q --no-deps --wheel-dir "$out" "$project"
  [ -f "$wheel" ] || { echo "build-wheels: pip built no $wheel" >&2; exit 1; }
  echo "build-wheels: $wheel"
done
