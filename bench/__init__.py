"""Benchmarks: each module runs with `python -m bench.NAME` and prints its figures."""
