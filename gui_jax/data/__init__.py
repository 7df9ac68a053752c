"""gui_jax.data."""
