"""gui_jax.tasks."""
