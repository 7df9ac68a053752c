"""gui_jax.train."""
