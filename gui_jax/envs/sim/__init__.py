"""gui_jax.envs.sim."""
