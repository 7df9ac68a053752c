"""Online trajectory GRPO at paper scale (AWG): Qwen2.5-VL-7B, screenshots + coordinates, env servers.

    python -m gui_jax.main --config configs/grpo_online_7b.py \
        --config.model.checkpoint=/path/to/Qwen2.5-VL-7B-Instruct \
        --config.env.backend=remote --config.env.server_urls='("http://10.0.0.2:8000","http://10.0.0.3:8000")' --config.env.token=...
AWG: β = 0.05, N = 8 rollouts per task, 8 tasks per iteration, ≤ 15 steps, curriculum easy → +medium
→ all, asynchronous first-come-first-serve rollouts with a staleness bound of 1 update.

Per-slice layouts (`--config configs/grpo_online_7b.py:grpo,v5p-64`; the argument is the algorithm, a layout
or both, comma-separated) are the 7B UI-S1 recipe's (configs/ui_s1_7b.py: same model, same screenshots),
with its train micro-batch in the `online` block; so are the model's memory settings (full remat, scanned
layers, images batched per row), without which the train step needs 1.85 TB of temporaries per chip on
v5p-64 (experiments/results/aot_roofline.md). Checked ahead of time by `python -m benchmarks.aot`.
"""
import ml_collections

from gui_jax.config_check import SAVE_TRAJECTORIES
from gui_jax.train.config_blocks import init_block, mesh_block, model_block, prompt_block, sft_block, sibling_recipe
from gui_jax.train.online.config import env_block, online_block

_UI_S1 = sibling_recipe(__file__, "ui_s1_7b")
MEMORY_SETTINGS = ("remat_policy", "scan_layers", "vision_per_row")   # model fields taken from the 7B UI-S1 recipe
LAYOUTS = {name: {("online" if block == "rl" else block): values
                  for block, values in _UI_S1.LAYOUTS[name].items()} for name in ("v5p-64", "v5p-128")}


def with_layout(c: ml_collections.ConfigDict, layout: str) -> ml_collections.ConfigDict:
    """Declares the layouts on `c` and applies `layout` ('' = none: the mesh block's defaults)."""
    c.layouts = LAYOUTS
    c.layout = layout
    if layout:
        _UI_S1.apply_layout(c, layout)
    return c


def get_config(arg: str = "grpo"):
    parts = [p for p in arg.split(",") if p]
    layout = next((p for p in parts if p in LAYOUTS), "")
    algorithm = next((p for p in parts if p not in LAYOUTS), "grpo")
    c = ml_collections.ConfigDict()
    c.job = "online_rl"
    c.seed = 0
    c.data = ml_collections.ConfigDict({
        "split": "instance", "train_seed_range": (0, 200), "test_seed_range": (1000, 1020),
        "difficulties": ("easy", "medium", "hard"), "max_optimal_steps": 30, "templates": (),
        "num_train_episodes": 2000, "num_test_episodes": 500, "resolution": (1092, 2436),
    })
    c.init = init_block()  # init.checkpoint_dir: a stage's checkpoints to start from; "" = run SFT first
    c.model = model_block("7b")
    c.model.tokenizer = "auto"
    c.model.max_new_tokens = 512
    c.model.sample_batch_size = 64
    c.model.max_prompt_tokens = 12288
    ui_s1_model = _UI_S1.get_config().model
    for name in MEMORY_SETTINGS:
        c.model[name] = ui_s1_model[name]
    c.mesh = mesh_block()
    c.prompt = prompt_block()
    c.prompt.history_image_max_pixels = 28 * 28 * 1280
    c.sft = sft_block()
    c.sft.learning_rate = 1e-5
    c.sft.num_steps = 1000
    c.sft.micro_batch_size = 8
    c.online = online_block(algorithm)
    c.online.iterations = 300
    c.online.episodes_per_iteration = 8    # tasks × 8 envs' worth of rollouts each
    c.online.num_rollouts = 8
    c.online.max_steps = 15
    c.online.temperature = 1.0
    c.online.learning_rate = 1e-6
    c.online.kl_coef = 0.05                # AWG β
    c.online.aggregation = "step_token_mean"  # AWG Eq. 1
    c.online.rollout_mode = "async"
    c.online.max_staleness = 1
    c.online.batch_cap = 64
    c.online.micro_batch_size = 8
    c.online.num_mini_batches = 4
    c.online.recompute_old_logprobs = True  # bf16 sampler vs float32 trainer
    c.online.curriculum_switch_iterations = (50, 100)
    c.online.checkpoint_every = 10
    if algorithm == "ppo":                 # GUI-Shepherd: actor lr 1e-6, critic lr 1e-5, no KL
        c.online.kl_coef = 0.0
        c.online.critic_learning_rate = 1e-5
        c.online.curriculum = False
    c.env = env_block()
    c.env.n_envs = 64
    c.env.n_standby = 8
    c.env.resolution = (1092, 2436)
    c.eval = ml_collections.ConfigDict({"max_steps": 15})
    c.eval.save_trajectories = SAVE_TRAJECTORIES  # held-out episodes kept for python -m gui_jax.view
    return with_layout(c, layout)
