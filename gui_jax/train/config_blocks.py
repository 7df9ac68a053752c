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
        "tokenizer": "auto",         # auto | tiny | qwen25 | path/to/tokenizer.json
        "min_pixels": 56 * 56,
        "max_pixels": 28 * 28 * 1280,
        "max_new_tokens": 48,
        "sample_batch_size": 32,
    })


def prompt_block() -> ml_collections.ConfigDict:
    return ml_collections.ConfigDict({
        "dialect": "ui_s1",
        "observation": "screenshot",  # screenshot | ui_text | both
        "target": "coordinate",       # coordinate | element
        "history_turns": 2,           # K (SPEC §3)
        "max_history_lines": 10,
        "ui_text_bounds": False,
        "ui_text_class": True,
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
        "stop_after_steps": ml_collections.config_dict.placeholder(int),
    })


def rl_block() -> ml_collections.ConfigDict:
    """UI-S1 semi-online RL (SPEC §3-§5) with paper defaults where the tiny run allows."""
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
        "require_thought": False,
        "dynamic_sampling": True,
        "dynamic_sampling_eta": 0.3,
        "dynamic_sampling_max_tries": 10,
        "clip_low": 0.2,
        "clip_high": 0.2,
        "dual_clip": ml_collections.config_dict.placeholder(float),
        "kl_coef": 1e-4,
        "kl_kind": "low_var_kl",
        "aggregation": "token_mean",
        "learning_rate": 1e-4,
        "warmup_steps": 0,
        "weight_decay": 0.0,
        "max_grad_norm": 1.0,
        "micro_batch_size": 16,
        "num_mini_batches": 1,        # optimizer steps per iteration (UI-S1: fixed_num_mini_batches 4)
        "checkpoint_every": 5,
        "stop_after_steps": ml_collections.config_dict.placeholder(int),
    })
