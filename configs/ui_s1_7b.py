"""UI-S1 semi-online RL at paper scale: Qwen2.5-VL-7B (UI-S1 Table 6 hyper-parameters).

Starts from a user-supplied Hugging Face checkpoint directory (no hub downloads):
    python -m gui_jax.main --config configs/ui_s1_7b.py --config.model.checkpoint=/path/to/Qwen2.5-VL-7B-Instruct
Screenshots + pixel coordinates, ui_s1 dialect, K = 2 history screenshots, γ = 0.5, ω = 1, ε = 1,
N = 8 rollouts, dynamic sampling η = 0.3, KL β = 1e-4, token-mean aggregation, lr 1e-6.

Sharding and precision (`mesh` block): float32 master weights and AdamW state, bf16 compute, FSDP over all
devices by default. Per-slice layouts (`--config configs/ui_s1_7b.py:v5p-64`), checked ahead of time with
`python -m benchmarks.aot --config configs/ui_s1_7b.py --topology v5p:4x4x2` (slice names count v5p
TensorCores, 2 per chip; topologies count chips):
  v5p-64  (32 chips, 95 GiB)  train mesh fsdp 32; sampler 8 replicas x tensor 4; micro-batch 32 rows (1/chip)
  v5p-128 (64 chips, 95 GiB)  v5p-64 on twice the chips: fsdp 64; sampler 16 replicas x tensor 4; 64 rows
  v5e-256 (256 chips, 16 GiB) train mesh fsdp 64 x tensor 4; sampler 64 replicas x tensor 4; micro-batch 64 rows
"""
import ml_collections

from gui_jax.train.config_blocks import mesh_block, model_block, prompt_block, rl_block, sft_block

LAYOUTS = {
    "v5p-64": {"chips": 32, "mesh": {"data": 1, "fsdp": 32, "tensor": 1, "sampler_data": 8, "sampler_fsdp": 1,
                                     "sampler_tensor": 4},
               "rl": {"micro_batch_size": 32}},
    "v5e-256": {"chips": 256, "mesh": {"data": 1, "fsdp": 64, "tensor": 4, "sampler_data": 64, "sampler_fsdp": 1,
                                       "sampler_tensor": 4},
                "rl": {"micro_batch_size": 64}},
}


def scaled_layout(layout: dict, factor: int) -> dict:
    """`layout` on `factor` times the chips with the same per-chip work: FSDP shards, sampler replicas and
    micro-batch rows grow with the chips (tensor parallelism stays), so each value is declared once."""
    mesh = dict(layout["mesh"], fsdp=layout["mesh"]["fsdp"] * factor,
                sampler_data=layout["mesh"]["sampler_data"] * factor)
    return dict(layout, chips=layout["chips"] * factor, mesh=mesh,
                rl=dict(layout["rl"], micro_batch_size=layout["rl"]["micro_batch_size"] * factor))


LAYOUTS["v5p-128"] = scaled_layout(LAYOUTS["v5p-64"], 2)


def apply_layout(c: ml_collections.ConfigDict, name: str) -> None:
    """Copies layout `name`'s blocks (mesh, rl or online, model) into the config."""
    if name not in c.layouts:
        raise ValueError(f"unknown layout {name!r}; known: {sorted(c.layouts)}")
    for block, values in c.layouts[name].items():
        if block != "chips":
            for k, v in values.items():
                c[block][k] = v


def get_config(layout: str = ""):
    c = ml_collections.ConfigDict()
    c.job = "quickstart"  # the same pipeline (episodes → SFT → semi-online RL → eval) at scale
    c.seed = 0
    c.offline_rl_baseline = False
    c.semi_online_rl = True     # False (with offline_rl_baseline): SFT and the offline-RL baseline only
    c.data = ml_collections.ConfigDict({
        "split": "instance", "train_seed_range": (0, 200), "test_seed_range": (1000, 1020),
        "difficulties": ("easy", "medium", "hard"), "max_optimal_steps": 30, "templates": (),
        "num_train_episodes": 10000, "num_test_episodes": 500,
        "resolution": (1092, 2436),       # ≈ native 1080×2400 rounded to multiples of 28
    })
    c.model = model_block("7b")
    c.model.tokenizer = "auto"
    c.model.max_pixels = 12845056
    c.model.max_new_tokens = 512
    c.model.sample_batch_size = 64
    c.prompt = prompt_block()             # screenshots, coordinates, ui_s1, K = 2 (previous + current)
    # Token budget (UI-S1 Table 6: prompt ≤ 12288, response ≤ 512): the current screenshot at its
    # native 1092×2436 (3393 image tokens), the previous one resized under 1280·28² pixels (644×1484,
    # 1219 tokens), 10 earlier responses as written: ≤ 10·512 + 4612 + ~200 < 12288 at any step.
    c.prompt.history_mode = "full"
    c.prompt.max_history_lines = 10
    c.prompt.history_image_max_pixels = 28 * 28 * 1280
    c.model.max_prompt_tokens = 12288
    c.sft = sft_block()
    c.sft.num_steps = 0                   # the 7B starts from an SFT'd checkpoint
    c.sft.learning_rate = 1e-5
    c.rl = rl_block()
    c.rl.iterations = 5 * 10000 // 32   # total_epochs 5 over the train episodes
    c.rl.episodes_per_iteration = 32      # train batch size (tasks)
    c.rl.num_rollouts = 8
    c.rl.temperature = 1.0
    c.rl.learning_rate = 1e-6
    c.rl.kl_coef = 1e-4
    c.rl.clip_low = 0.2
    c.rl.clip_high = 0.2
    c.rl.num_mini_batches = 4           # fixed_num_mini_batches
    c.rl.micro_batch_size = 8
    c.rl.require_thought = True
    c.rl.patch_strategy = "thought_free"
    c.rl.patch_threshold = 1
    c.model.remat_policy = "full"         # recompute each layer / vision block in the backward pass
    c.model.scan_layers = True
    c.model.vision_per_row = True         # images batched per row: the vision tower stays split with the rows
    c.mesh = mesh_block()                 # fp32 masters + AdamW, bf16 compute, FSDP over all devices
    c.layouts = LAYOUTS
    c.layout = layout
    if layout:
        apply_layout(c, layout)
    c.eval = ml_collections.ConfigDict({"step_metrics": True, "online_trials": 3,
                                        "online_temperature": 1.0, "max_steps": 30})
    return c
