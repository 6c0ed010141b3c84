"""Benchmarks and measurements that print figures (make bench, bench-tls, bench-topics, bench-spark, traffic)."""
