"""Benchmarks: each `python -m benchmarks.<name> --json out.json` writes its figures with their inputs.

Importing the package applies the jobs' host allocator policy (gui_jax/host_malloc.py, before jax starts its
threads), so a benchmark times the step a job runs; benchmarks/host_malloc.py compares the policies.
"""
from gui_jax.host_malloc import configure_host_malloc

configure_host_malloc()
