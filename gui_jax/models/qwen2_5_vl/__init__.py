"""gui_jax.models.qwen2_5_vl: Flax NNX port of Qwen2.5-VL (config, vision, text, model, HF checkpoint I/O).

See model.py for the model API, text.py for the KV cache, hf_io.py for checkpoint loading / saving.
"""
from gui_jax.models.qwen2_5_vl.config import (  # noqa: F401
    QWEN_SPECIAL_IDS, QWEN_SPECIAL_TOKENS, TINY_BASE_VOCAB, TINY_SPECIAL_IDS, TINY_VOCAB_SIZE, Qwen25VLConfig,
    TextConfig, VisionConfig, preset, tiny)
from gui_jax.models.qwen2_5_vl.hf_io import load_hf_checkpoint, param_mapping, save_hf_checkpoint  # noqa: F401
from gui_jax.models.qwen2_5_vl.model import (  # noqa: F401
    Qwen25VLForConditionalGeneration, Qwen25VLOutput, logical_axes, splice_image_features)
from gui_jax.models.qwen2_5_vl.rope_index import get_rope_index, text_position_ids  # noqa: F401
from gui_jax.models.qwen2_5_vl.text import KVCache  # noqa: F401
from gui_jax.models.qwen2_5_vl.vision import VisionLayout, grouped_vision_layout, vision_layout  # noqa: F401
