"""UI-S1 semi-online RL at paper scale: Qwen2.5-VL-7B (UI-S1 Table 6 hyper-parameters).

Starts from a user-supplied Hugging Face checkpoint directory (no hub downloads):
    python -m gui_jax.main --config configs/ui_s1_7b.py --config.model.checkpoint=/path/to/Qwen2.5-VL-7B-Instruct
Screenshots + pixel coordinates, ui_s1 dialect, K = 2 history screenshots, γ = 0.5, ω = 1, ε = 1,
N = 8 rollouts, dynamic sampling η = 0.3, KL β = 1e-4, token-mean aggregation, lr 1e-6.
"""
import ml_collections

from gui_jax.train.config_blocks import model_block, prompt_block, rl_block, sft_block


def get_config():
    c = ml_collections.ConfigDict()
    c.job = "quickstart"  # the same pipeline (episodes → SFT → semi-online RL → eval) at scale
    c.seed = 0
    c.offline_rl_baseline = False
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
    c.prompt = prompt_block()             # screenshots, coordinates, ui_s1, K = 2
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
    c.eval = ml_collections.ConfigDict({"step_metrics": True, "online_trials": 3,
                                        "online_temperature": 1.0, "max_steps": 30})
    return c
