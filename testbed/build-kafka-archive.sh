#!/usr/bin/env bash
# Assembles the pinned Kafka version from Maven Central into an archive with
# the Apache binary tarball's layout (kafka_<scala>-<version>/libs/*.jar), for
# the testbed and CI. The version is the one the kafka role pins, or the one
# given (testbed/build-kafka-archive.sh 4.2.0, for the upgrade drill).
# The archive is reproducible: the same jars give the same bytes.
set -euo pipefail
cd "$(dirname "$0")"

defaults=../roles/kafka_node/defaults/main.yml
version=${1:-$(sed -n 's/^kafka_node_version: "\(.*\)"$/\1/p' "$defaults")}
scala=$(sed -n 's/^kafka_node_scala_version: "\(.*\)"$/\1/p' "$defaults")
name="kafka_${scala}-${version}"
archive="dist/${name}.tgz"
[ -n "$version" ] && [ -n "$scala" ] || { echo "cannot read kafka_node_version from $defaults" >&2; exit 1; }
if [ -f "$archive" ] && [ -f "$archive.sha512" ] && [ "$archive" -nt kafka-dist/pom.xml ] && [ "$archive" -nt "$(basename "$0")" ]; then
  exit 0
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
echo "build-kafka-archive: resolving Kafka $version (Scala $scala) from Maven Central"
mvn -q -B -f kafka-dist/pom.xml dependency:copy-dependencies \
  -Dkafka.version="$version" -Dscala.binary.version="$scala" \
  -DincludeScope=runtime -DoutputDirectory="$stage/$name/libs"
mkdir -p dist
tar -C "$stage" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -c "$name" \
  | gzip -n >"$archive.tmp"
mv "$archive.tmp" "$archive"
# Its checksum beside it, as Apache publishes one beside each release: the
# testbed's mirror serves both, and the inventory's checksum is read from it.
(cd "$(dirname "$archive")" && sha512sum "$(basename "$archive")" >"$(basename "$archive").sha512")
echo "build-kafka-archive: $archive ($(du -h "$archive" | cut -f1))"
