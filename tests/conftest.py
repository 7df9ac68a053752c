"""Suite-wide collection order: the longest tests run first, so `pytest -n 2` does not end on one worker
running a several-minute test alone (CI's wall time is bounded by that tail), and one persistent XLA compilation
cache for the whole run."""
import os
import shutil
import tempfile

# The tests build the same tiny programs again and again (in-process, on both xdist workers and in the jobs they
# launch as subprocesses, which inherit the variable), and compiling them is most of the suite's time: the whole
# suite with -n 2 on a 2-core AVX2 machine, alone, took 39 min 19 s without the cache and 22 min 32 s with it.
# Set before jax is imported; a fresh directory per run, removed at its end, so no compiled program outlives the
# run. Tests that count compilations turn it off (support/xla_cache.py).
_CREATED_CACHE = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _CREATED_CACHE = os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="gui_jax_tests_xla_")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

# LLVM at -O1 instead of XLA's default -O3: the suite's many small programs compile faster and the tiny models'
# steps run as fast (alone, 2-core AVX2: a trainer/scan/export/sampler subset 319 s -> 287 s wall with -n 2;
# the look-up test 255 s vs 261 s). No fast-math at any level, so exact values and the card's losses hold.
# Inherited by the jobs the tests launch; a level the caller set is kept.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=1").strip()

# The jobs' host allocator policy (gui_jax/host_malloc.py) in the test processes too, before jax starts its
# threads: the in-process train steps stop re-faulting their temporaries (the jobs the tests launch apply it
# themselves).
from gui_jax.host_malloc import configure_host_malloc  # noqa: E402

configure_host_malloc()

# file names of the tests that take minutes on 2 cores (measured with --durations), longest first
LONGEST_FIRST = ("test_learns_lookup.py", "test_quickstart_determinism.py", "test_pretrain_job.py",
                 "test_resume_cli.py", "test_notebooks.py")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)    # stable: every other test keeps its collection order


def pytest_unconfigure(config):
    if _CREATED_CACHE and not hasattr(config, "workerinput"):   # the process that made it (xdist's controller)
        shutil.rmtree(_CREATED_CACHE, ignore_errors=True)
