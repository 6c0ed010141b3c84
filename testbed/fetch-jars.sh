#!/usr/bin/env bash
# Fetches the JVM artifacts besides Kafka itself from Maven Central into dist/:
#   dist/jmx_prometheus_javaagent-<v>.jar  the brokers' metrics agent (the testbed
#                                          installs it through kafka_node_metrics_agent_src)
#   dist/spark-jars/                       spark-sql-kafka and its runtime dependencies,
#                                          for the PySpark smoke job
# Versions: kafka_node_metrics_agent_version in the kafka role, pyspark in requirements.txt.
set -euo pipefail
cd "$(dirname "$0")"

agent=$(sed -n 's/^kafka_node_metrics_agent_version: "\(.*\)"$/\1/p' ../roles/kafka_node/defaults/main.yml)
spark=$(sed -n 's/^pyspark==\(.*\)$/\1/p' ../requirements.txt)
[ -n "$agent" ] && [ -n "$spark" ] || { echo "fetch-jars: cannot read the pinned versions" >&2; exit 1; }
mkdir -p dist

if [ ! -f "dist/jmx_prometheus_javaagent-$agent.jar" ]; then
  mvn -q -B dependency:copy -Dartifact="io.prometheus.jmx:jmx_prometheus_javaagent:$agent" -DoutputDirectory=dist
fi
if [ ! -f "dist/spark-jars/.spark-$spark" ]; then
  rm -rf dist/spark-jars
  mvn -q -B -s maven-settings.xml -f spark-jars/pom.xml dependency:copy-dependencies -Dspark.version="$spark" \
    -DincludeScope=runtime -DoutputDirectory="$PWD/dist/spark-jars" \
    -DincludeArtifactIds=spark-sql-kafka-0-10_2.13,spark-token-provider-kafka-0-10_2.13,kafka-clients,commons-pool2
  touch "dist/spark-jars/.spark-$spark"
fi
