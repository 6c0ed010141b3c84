"""A bounded load harness: sequenced acks=all writes and per-DC readers, and a verifier of what they saw."""
