"""Default config blocks shared by the recipes in configs/ (each recipe overrides what it needs)."""
from __future__ import annotations

import ml_collections


def model_block(preset: str = "tiny") -> ml_collections.ConfigDict:
    return ml_collections.ConfigDict({
        "preset": preset,            # tiny | 3b | 7b | 32b | 72b (ignored when checkpoint is set)
        "checkpoint": "",            # a Hugging Face Qwen2.5-VL directory to start from
        "num_hidden_layers": 0,      # >0 overrides the preset's text depth
        "intermediate_size": 0,      # >0 overrides the preset's text MLP width
        "vision_depth": 0,           # >0 overrides the preset's vision depth
        "tokenizer": "auto",         # auto | tiny | tiny_phonesim | tiny_phonesim_num | qwen25 | tokenizer.json or SentencePiece .model path
        "min_pixels": 56 * 56,
        "max_pixels": 28 * 28 * 1280,
        "max_new_tokens": 48,
        "max_prompt_tokens": 8192,   # longest prompt the sampler accepts (UI-S1: 12288)
        "sample_batch_size": 32,
        "prefill_chunk": 0,           # >0: prompts run through the KV cache in chunks of this many tokens
        "kv_cache_dtype": "",         # sampler KV cache dtype ('' = compute dtype; 'bfloat16' halves it)
        "vision_per_row": False,      # images batched per row: a sharded vision tower stays split with its rows
    })


def prompt_block() -> ml_collections.ConfigDict:
    return ml_collections.ConfigDict({
        "dialect": "ui_s1",
        "observation": "screenshot",  # screenshot | ui_text | both
        "target": "coordinate",       # coordinate | element | text (element index, or its label words)
        "history_turns": 2,           # K: observations in the prompt, the current one included (§3)
        "history_mode": "full",       # full (UI-S1: earlier responses as written) | compact (one line each)
        "max_history_lines": 10,      # earlier steps kept (full: text turns; compact: lines); ≤ 0 = all
        "image_max_pixels": 0,        # current screenshot resized under this area (0 = as rendered)
        "history_image_max_pixels": 0,  # history screenshots (0 = like the current one)
        "image_min_pixels": 56 * 56,
        "ui_text_bounds": False,
        "ui_text_class": True,
        "word_tokens": False,         # words after spaces in goal and UI labels (see PromptConfig)
        "ui_text_skip_unlabeled": False,
        "ui_text_index_last": False,
        "max_ui_lines": 40,
        "system_prompt": True,
        "goal_last": False,
    })


def sft_block() -> ml_collections.ConfigDict:
    return ml_collections.ConfigDict({
        "seed": 0,
        "num_steps": 200,
        "batch_size": 16,
        "micro_batch_size": 16,
        "learning_rate": 1e-3,
        "warmup_steps": 10,
        "weight_decay": 0.0,
        "max_grad_norm": 1.0,
        "schedule": "constant",
        "checkpoint_every": 50,
        "packing": False,             # several trained steps per row (segment ids); needs row_length
        "row_length": 0,              # tokens per packed row (rounded up to a length bucket)
        "grounding_fraction": 0.0,    # share of SFT items that are "Tap on '<label>'" → element (UI text prompts)
        "grounding_instruction": "Tap on '{label}'.",
        "prompt_loss_weight": 0.0,    # w · next-token loss on prompt tokens (0: response tokens only)
        "prompt_loss_chunk": 1024,    # prompt positions per LM-head call in that loss (0 = all at once)
        "group_by_length": False,     # batches of similar prompt length (less padding to the longest row)
        # synthetic copy / recall steps before SFT from scratch (train/copy_warmup.py; 0 = none)
        "copy_warmup_steps": 0,
        "copy_warmup_batch": 32,
        "copy_warmup_length": 96,
        "stop_after_steps": ml_collections.config_dict.placeholder(int),
    })


def rl_block() -> ml_collections.ConfigDict:
    """UI-S1 semi-online RL (docs/algorithms.md §3-§5) with paper defaults where the tiny run allows."""
    return ml_collections.ConfigDict({
        "seed": 0,
        "iterations": 20,
        "episodes_per_iteration": 8,
        "num_rollouts": 4,            # N
        "patch_strategy": "thought_free",   # thought_free | off_policy | on_policy
        "patch_threshold": 1,         # ε (−1 = unlimited)
        "temperature": 1.0,
        "gamma": 0.5,
        "omega": 1.0,
        "cut_at_mismatch": True,
        "reward_preset": "paper",     # paper | code
        # None: as the dialect (a thought field → a non-empty thought is required for format = 1)
        "require_thought": ml_collections.FieldReference(None, field_type=bool),
        "bbox_scale": 1.2,            # matcher: expert bbox enlarged ×1.2 about its centre
        "dist_threshold": 0.04,       # matcher: normalised distance to the expert point
        "episode_level": "paper",     # paper (Eq. 11, trajectory returns) | code (per-step rewards)
        "patch_aux_checkpoint": "",   # off_policy patches: the auxiliary thought model (HF folder)
        "dynamic_sampling": True,
        "dynamic_sampling_eta": 0.3,
        "dynamic_sampling_max_tries": 10,
        "dynamic_sampling_short": "log",  # fewer groups than the batch after the tries: log | raise
        "clip_low": 0.2,
        "clip_high": 0.2,
        "dual_clip": ml_collections.FieldReference(3.0, field_type=float),  # c for A < 0; None = off
        "kl_coef": 1e-4,
        "kl_kind": "low_var_kl",
        "aggregation": "token_mean",
        "learning_rate": 1e-4,
        "warmup_steps": 0,
        "weight_decay": 0.0,
        "max_grad_norm": 1.0,
        "micro_batch_size": 16,
        "num_mini_batches": 1,        # optimizer steps per iteration (UI-S1: fixed_num_mini_batches 4)
        "recompute_old_logprobs": False,  # π_old from the training forward, not the sampler (bf16 sampling)
        "checkpoint_every": 5,
        "packing": False,             # several trained steps per row (segment ids); needs row_length
        "row_length": 0,              # tokens per packed row (rounded up to a length bucket)
        "stop_after_steps": ml_collections.config_dict.placeholder(int),
    })


def mesh_block() -> ml_collections.ConfigDict:
    """Device mesh and precision of training and sampling (docs: gui_jax/models/sharding.py).

    The training mesh is (data, fsdp, tensor) over all devices of all processes (-1 = whatever the
    device count leaves). Weights map to mesh axes through a logical rule table ('default': FSDP on
    the model dimension + tensor parallelism on heads / MLP / vocab; 'fsdp': FSDP only).
    The sampler uses the same devices with its own axis sizes (all 0 = the training mesh's shape);
    its weights are resharded and cast on device after every update.
    """
    return ml_collections.ConfigDict({
        "data": 1,
        "fsdp": -1,
        "tensor": 1,
        "rules": "default",             # default | fsdp
        "param_dtype": "float32",       # master weights and AdamW state
        "compute_dtype": "bfloat16",    # forward / backward matmuls (float32 logits and loss)
        "sampler_data": 0,
        "sampler_fsdp": 0,
        "sampler_tensor": 0,
        "sampler_dtype": "bfloat16",    # weights the sampler holds (its KV cache uses the compute dtype)
        "distributed": "auto",          # jax.distributed: auto (multi-process env detected) | on | off
    })


def sibling_recipe(config_file: str, name: str):
    """The module of another recipe in the same folder (recipes build on each other, e.g. on quickstart)."""
    import os

    from gui_jax.core.recipe_files import load_python_file
    return load_python_file(os.path.join(os.path.dirname(os.path.abspath(config_file)), f"{name}.py"))
