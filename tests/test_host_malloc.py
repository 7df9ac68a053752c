"""The host allocator policy (gui_jax/host_malloc.py): under `keep` a freed large block is reused without page
faults, under `system` glibc maps it afresh (every page faulted again); `auto` keeps only where jax computes on the
CPU alone; the CLI applies it and names a bad value."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gui_jax import host_malloc

REPO = Path(__file__).resolve().parents[1]
BLOCK_MB = 256

# A fresh process: the policy, then on a worker thread (where XLA:CPU runs its programs) a 256 MB block from
# malloc written, freed, and allocated and written again; the minor page faults of the second allocation alone.
# (ctypes malloc, not numpy: numpy asks for transparent huge pages, which hides the page count.)
PROBE = f"""
import ctypes, json, resource, threading
from gui_jax.host_malloc import configure_host_malloc
policy = configure_host_malloc()
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
n, out = {BLOCK_MB} * 2**20, {{}}

def work():
    p = libc.malloc(n); ctypes.memset(p, 1, n); libc.free(p)
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    p = libc.malloc(n); ctypes.memset(p, 1, n)
    out["faults"] = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before
    libc.free(p)

t = threading.Thread(target=work); t.start(); t.join()
print(json.dumps({{"policy": policy, "faults": out["faults"]}}))
"""


def probe(policy: str) -> dict:
    env = dict(os.environ, GUI_JAX_HOST_MALLOC=policy)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=REPO, capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_keep_reuses_freed_block_without_faults():
    pages = BLOCK_MB * 2**20 // os.sysconf("SC_PAGE_SIZE")
    keep, system = probe("keep"), probe("system")
    assert system["policy"] == "system" and system["faults"] > 0.9 * pages, system   # a fresh mapping, re-faulted
    if host_malloc.glibc_version() is None:    # no mallopt: `keep` is the system allocator, re-faulting as well
        assert keep["policy"] == "system" and keep["faults"] > 0.9 * pages, keep
    else:                                      # the freed block came back from the heap, already mapped
        assert keep["policy"] == "keep" and keep["faults"] < 0.02 * pages, keep


def test_non_glibc_platform_stays_system(monkeypatch):
    monkeypatch.setattr(host_malloc, "_APPLIED", {})
    monkeypatch.setattr(host_malloc, "glibc_version", lambda: None)
    assert host_malloc.configure_host_malloc("keep") == "system"
    assert host_malloc.configure_host_malloc("keep") == "system"    # applied once: later calls report the first


def test_auto_keeps_only_where_jax_computes_on_the_cpu(monkeypatch):
    assert host_malloc.cpu_only({"JAX_PLATFORMS": "cpu"}) and host_malloc.cpu_only({"JAX_PLATFORMS": "cpu,cuda"})
    assert not host_malloc.cpu_only({"JAX_PLATFORMS": "cuda"}) and not host_malloc.cpu_only({"TPU_NAME": "v5p"})
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "jax_plugins" else real_find_spec(name, *a))
    assert not host_malloc.cpu_only({})                  # a GPU plugin installed: its device holds the temporaries
    monkeypatch.delenv(host_malloc.ENV_VAR, raising=False)
    monkeypatch.setattr(host_malloc, "_APPLIED", {})
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    assert host_malloc.configure_host_malloc("auto") == "system"
    monkeypatch.setattr(host_malloc, "_APPLIED", {})
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    assert host_malloc.configure_host_malloc() == ("keep" if host_malloc.glibc_version() else "system")


def test_bad_policy_is_named(monkeypatch):
    monkeypatch.setattr(host_malloc, "_APPLIED", {})
    monkeypatch.setenv(host_malloc.ENV_VAR, "jemalloc")
    with pytest.raises(ValueError, match=r"GUI_JAX_HOST_MALLOC='jemalloc': expected one of auto, keep, system"):
        host_malloc.configure_host_malloc()
    p = subprocess.run([sys.executable, "-m", "gui_jax.main", "--config=configs/quickstart.py"], cwd=REPO,
                       env=dict(os.environ, GUI_JAX_HOST_MALLOC="jemalloc"), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1].endswith("GUI_JAX_HOST_MALLOC='jemalloc': expected one of auto, keep, "
                                                    "system")
