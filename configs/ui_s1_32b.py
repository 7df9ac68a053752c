"""UI-S1 semi-online RL with Qwen2.5-VL-32B on a v5p-128 slice (64 chips): the 7B recipe at 32B scale.

Start from a user-supplied Hugging Face checkpoint directory (no hub downloads):
    python -m gui_jax.main --config configs/ui_s1_32b.py:v5p-128 --config.model.checkpoint=/path/to/Qwen2.5-VL-32B-Instruct
Same RL recipe and prompts as configs/ui_s1_7b.py. Layout (checked ahead of time with
`python -m benchmarks.aot --config configs/ui_s1_32b.py --topology v5p:4x4x4`):
  v5p-128 (64 chips, 95 GiB): train mesh fsdp 16 x tensor 4 (float32 masters + AdamW sharded 64 ways, bf16
  compute); sampler 16 replicas x tensor 4 (bf16 weights, 16.5 GiB per chip); micro-batch 16 rows (1 per
  fsdp shard).
"""
import importlib.util
import os

_SPEC = importlib.util.spec_from_file_location("ui_s1_7b", os.path.join(os.path.dirname(__file__), "ui_s1_7b.py"))
_BASE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_BASE)

LAYOUTS = {
    "v5p-128": {"chips": 64, "mesh": {"data": 1, "fsdp": 16, "tensor": 4, "sampler_data": 16, "sampler_fsdp": 1,
                                      "sampler_tensor": 4},
                "rl": {"micro_batch_size": 16}},
}


def get_config(layout: str = ""):
    c = _BASE.get_config()
    c.model.preset = "32b"
    c.layouts = LAYOUTS
    c.layout = layout
    if layout:
        _BASE.apply_layout(c, layout)
    return c
