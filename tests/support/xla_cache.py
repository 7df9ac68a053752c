"""Turning the suite's persistent XLA compilation cache (tests/conftest.py) off where a test counts compilations:
a cache hit skips the backend compile that jax.monitoring reports, so a counted program would go missing."""
import contextlib

import jax
from jax.experimental.compilation_cache import compilation_cache


@contextlib.contextmanager
def persistent_cache_off():
    """Every compilation inside the block compiles (and reports its compile event); the setting returns after."""
    before = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()            # the cache is checked once per process: make it look again
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", before)
        compilation_cache.reset_cache()
