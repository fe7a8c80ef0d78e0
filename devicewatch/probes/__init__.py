"""Probes read the machine: CPU cores and memory, the workload's process tree, the GPUs."""
