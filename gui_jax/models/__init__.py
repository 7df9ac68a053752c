"""gui_jax.models."""
