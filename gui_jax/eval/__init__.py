"""gui_jax.eval."""
