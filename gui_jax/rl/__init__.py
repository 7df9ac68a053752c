"""gui_jax.rl."""
