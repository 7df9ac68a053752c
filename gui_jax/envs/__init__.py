"""gui_jax.envs."""
