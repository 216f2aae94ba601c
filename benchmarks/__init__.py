"""Benchmarks: synthetic data generators and latency measurements (not timed tests)."""
