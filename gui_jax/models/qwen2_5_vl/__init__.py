"""gui_jax.models.qwen2_5_vl."""
