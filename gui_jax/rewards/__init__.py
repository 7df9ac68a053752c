"""gui_jax.rewards."""
