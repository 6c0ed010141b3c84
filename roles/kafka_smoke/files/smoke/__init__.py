"""The smoke test: a sequenced, checksummed data set produced with acks=all,
read back by a PySpark job through follower fetching, and proof from the
brokers' own byte counters that the job read from its own DC."""
