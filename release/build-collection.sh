#!/usr/bin/env bash
# Builds the stretch.kafka artifact as it ships: the collection (galaxy.yml's
# manifest) with the wheels of the project's own Python packages
# (packages/*: the kafka-group source, the smoke test and the cluster's
# exporter) bundled in roles/python_venv/files/wheels, where the roles install
# them from, offline, and README.collection.md as the artifact's README.md.
#
#   release/build-collection.sh [OUTPUT_DIR]     (default: build/)
#   release/build-collection.sh --wheels-only    (the wheels and their bundle.json, in place)
#
# The wheels are pure Python (one serves the nodes' 3.11 and 3.13) and byte for
# byte the same from the same sources (SOURCE_DATE_EPOCH), so a rebuild changes
# no host; each is rebuilt only when its sources are newer. bundle.json names
# each package's version, wheel and sha256: python_venv installs them with
# pip's hash checking, and preflight refuses an artifact that lacks them (a
# plain `ansible-galaxy collection build` of a checkout that never ran this).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
wheels=roles/python_venv/files/wheels
mkdir -p "$wheels"

for project in packages/*/; do
  name=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$project/pyproject.toml")
  version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$project/pyproject.toml")
  [ -n "$name" ] && [ -n "$version" ] || { echo "build-collection: no name or version in $project/pyproject.toml" >&2; exit 1; }
  wheel="$wheels/${name//-/_}-${version}-py3-none-any.whl"
  if [ -f "$wheel" ] && [ -z "$(find "$project/pyproject.toml" "$project/README.md" "$project/src" -newer "$wheel" \
      -not -name '*.pyc' -not -path '*/__pycache__*' -not -path '*.egg-info*' | head -1)" ]; then
    continue
  fi
  rm -f "$wheels/${name//-/_}"-*.whl
  SOURCE_DATE_EPOCH=315532800 "$python" -m pip wheel -q --no-deps --wheel-dir "$wheels" "$project"
  [ -f "$wheel" ] || { echo "build-collection: pip built no $wheel" >&2; exit 1; }
  echo "build-collection: $wheel"
done
"$python" release/bundle.py "$wheels" packages/*/pyproject.toml
[ "${1:-}" = "--wheels-only" ] && exit 0

# The artifact is built from a staging copy, so that its README.md is the
# installed collection's (README.collection.md); galaxy.yml's manifest then
# picks what ships, as it does for a plain build of the checkout.
out=${1:-build}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
git ls-files -z --cached --others --exclude-standard -- galaxy.yml meta roles playbooks plugins docs packages examples \
    inventories/production changelogs CHANGELOG.md LICENSE tests/sanity |
  tar -c --null -T - -f - | tar -x -C "$stage"
mkdir -p "$stage/$wheels" && cp "$wheels"/*.whl "$wheels/bundle.json" "$stage/$wheels/"
cp README.collection.md "$stage/README.md"
mkdir -p "$out"
ansible-galaxy collection build --force --output-path "$out" "$stage"
