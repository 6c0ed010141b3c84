"""The smoke test: a sequenced, checksummed data set produced with acks=all,
read back by a PySpark job through follower fetching, and proof from the
brokers' own byte counters that the job read from its own DC.

`python -m kafka_smoke` runs it (kafka_smoke.run); the stretch.kafka
collection's kafka_smoke role installs this package on its runner and runs
it there. Its Spark jobs (kafka_smoke.job, the bounded read; and
kafka_smoke.stream_job, the streaming drill's active/passive job) are
submitted from the runner with spark-submit (kafka_smoke.submit)."""
