"""gui_jax: JAX/Flax research codebase for training mobile GUI agents with RL."""
__version__ = "0.1.0"
