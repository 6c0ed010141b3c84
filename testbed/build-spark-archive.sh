#!/usr/bin/env bash
# Packs the Spark runtime of the pinned pyspark (requirements.txt), from the
# virtualenv, into an archive with the Apache binary tarball's layout
# (spark-<version>-bin-pyspark/{bin,sbin,jars,python}), for the testbed's Spark
# standalone cluster (roles/spark). The Apache download site is
# not reachable here; PyPI's pyspark carries the same jars and launchers. The
# workers then run exactly the Spark the smoke job's driver runs.
set -euo pipefail
cd "$(dirname "$0")"

version=$(sed -n 's/^pyspark==\(.*\)$/\1/p' ../requirements.txt)
[ -n "$version" ] || { echo "build-spark-archive: cannot read the pyspark pin in requirements.txt" >&2; exit 1; }
home=$(../.venv/bin/python -c 'import pyspark, os; print(os.path.dirname(pyspark.__file__))')
installed=$(../.venv/bin/python -c 'import pyspark; print(pyspark.__version__)')
[ "$installed" = "$version" ] || { echo "build-spark-archive: pyspark $installed is installed, $version is pinned" >&2; exit 1; }
name="spark-${version}-bin-pyspark"
archive="dist/${name}.tgz"
if [ -f "$archive" ] && [ -f "$archive.sha512" ] && [ "$archive" -nt ../requirements.txt ] && [ "$archive" -nt "$(basename "$0")" ]; then
  exit 0
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name" dist
# python/lib holds pyspark.zip and py4j's zip, as in the Apache release: the Python
# processes of a job submitted on the Spark hosts (roles/spark_stream) import pyspark from there.
cp -r "$home/bin" "$home/sbin" "$home/jars" "$home/python" "$stage/$name/"
echo "Spark $version (from pyspark $version)" >"$stage/$name/RELEASE"
# gzip -1: the jars hardly compress, and the archive is rebuilt only with a new pin.
tar -C "$stage" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -c "$name" \
  | gzip -1 -n >"$archive.tmp"
mv "$archive.tmp" "$archive"
# Its checksum beside it, as Apache publishes one beside each release: the
# testbed's mirror serves both, and the inventory's checksum is read from it.
(cd "$(dirname "$archive")" && sha512sum "$(basename "$archive")" >"$(basename "$archive").sha512")
echo "build-spark-archive: $archive ($(du -h "$archive" | cut -f1))"
