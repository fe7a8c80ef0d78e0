"""Fakes of outside systems for tests and benchmarks: inputs only, never the thing under test."""
