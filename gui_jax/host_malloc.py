"""How the process's C allocator hands memory to XLA's CPU runtime (glibc on Linux).

XLA:CPU allocates each program's temporaries afresh on every call (one buffer of up to ~1 GB for the quickstart's
SFT update). glibc serves allocations over its mmap threshold (32 MB at most) with a fresh mmap and gives them
back on free, so every call faults its temporaries in again and the kernel zeroes every page: on 2 cores the
quickstart's SFT update spent ~30 % of its time in the kernel's page clearing (`perf`: clear_page_erms), 15.7 M
page faults in 75 s. The `keep` policy sets three mallopt options before XLA starts its threads:

- M_ARENA_MAX = 1: every thread allocates from the main (brk) heap; glibc falls back to mmap in a thread's own
  arena whenever a block outgrows it, whatever the other options say;
- M_MMAP_MAX = 0: no allocation is served by mmap;
- M_TRIM_THRESHOLD = 2**31 - 1: freed memory stays in the heap for the next call instead of going back.

The heap then holds the high-water mark of the job's allocations (resident memory no longer falls between
calls), and compilation is ~20 % slower (the shared arena). `benchmarks/host_malloc.py` measures both policies on
the quickstart's SFT update in one run.

GUI_JAX_HOST_MALLOC: `auto` (default) = `keep` where jax will compute on the CPU alone (JAX_PLATFORMS=cpu, or no
accelerator runtime installed), `system` where a GPU / TPU holds the temporaries; `keep`; `system` (glibc's
defaults). Elsewhere than Linux + glibc every policy is the system allocator.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import sys

ENV_VAR = "GUI_JAX_HOST_MALLOC"
POLICIES = ("auto", "keep", "system")
_M_TRIM_THRESHOLD, _M_MMAP_MAX, _M_ARENA_MAX = -1, -4, -8     # glibc's malloc.h parameter numbers
_KEEP_OPTIONS = ((_M_ARENA_MAX, 1), (_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, 2**31 - 1))
_APPLIED: dict = {}


def glibc_version() -> str | None:
    """'2.36' on glibc; None elsewhere (musl, macOS, Windows)."""
    try:
        name = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return None
    return name.split()[-1] if name and name.startswith("glibc") else None


def cpu_only(environ=os.environ) -> bool:
    """Whether jax will compute on the CPU alone: JAX_PLATFORMS names cpu first, or is unset and no accelerator
    runtime is there (a TPU, libtpu, a jax plugin such as CUDA's)."""
    platforms = (environ.get("JAX_PLATFORMS") or "").strip()
    if platforms:
        return platforms.split(",")[0].strip() == "cpu"
    from importlib.metadata import entry_points

    from gui_jax import tpu_present
    return not (tpu_present(environ) or importlib.util.find_spec("libtpu") is not None
                or importlib.util.find_spec("jax_plugins") is not None or list(entry_points(group="jax_plugins")))


def configure_host_malloc(policy: str | None = None) -> str:
    """Applies `policy` (default: $GUI_JAX_HOST_MALLOC, else "auto") once per process, before jax starts its
    threads, and returns the policy in effect: "keep" or "system" (what a non-glibc platform always has). A later
    call returns the first one's result; an unknown policy is a ValueError naming the variable."""
    if "policy" in _APPLIED:
        return _APPLIED["policy"]
    policy = policy or os.environ.get(ENV_VAR, "") or "auto"
    if policy not in POLICIES:
        raise ValueError(f"{ENV_VAR}={policy!r}: expected one of {', '.join(POLICIES)}")
    if policy == "auto":
        policy = "keep" if cpu_only() else "system"
    effective = "system"
    if policy == "keep" and sys.platform.startswith("linux") and glibc_version():
        mallopt = ctypes.CDLL(None).mallopt
        mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
        if all(mallopt(param, value) == 1 for param, value in _KEEP_OPTIONS):   # mallopt returns 1 on success
            effective = "keep"
    _APPLIED["policy"] = effective
    return effective


def applied_policy() -> str:
    """The policy in effect in this process: "keep" once configure_host_malloc applied it, else "system"."""
    return _APPLIED.get("policy", "system")
