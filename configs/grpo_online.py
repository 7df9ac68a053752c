"""Online trajectory-level GRPO with the AWG curriculum: the tiny agent on in-process PhoneSim.

    python -m gui_jax.main --config configs/grpo_online.py [--workdir runs/grpo_online]
    # against env servers (python -m gui_jax.envs.server --backend phonesim --port 8000):
    python -m gui_jax.main --config configs/grpo_online.py --config.env.backend=remote \
        --config.env.server_urls='("http://127.0.0.1:8000",)'
    # a device or AndroidWorld's env servers (docs/devices.md): env.backend = android | androidworld
    ... --config.env.backend=android --config.env.serials='("emulator-5554",)' --config.env.tasks='("Settings|Turn on Wi-Fi",)'

expert episodes (instance split) → short SFT → online GRPO (N rollouts per task, groups keyed by
task id, KL to the SFT policy, easy → +medium → all) → greedy online SR on held-out tasks with
Wilson 95 % intervals, McNemar vs the SFT start, and the rollout report.
    # streaming asynchronous rollouts (train on the first complete groups, staleness ≤ online.max_staleness):
    ... --config.online.rollout_mode=async
    # task reward from a trained reward model instead of PhoneSim's rule check (both are logged):
    ... --config.online.reward=rm --config.online.rm_checkpoint_dir=runs/reward_model/rm/checkpoints
"""
import ml_collections

from gui_jax.config_check import SAVE_TRAJECTORIES
from gui_jax.train.config_blocks import init_block, sft_block, sibling_recipe
from gui_jax.train.online.config import env_block, online_block


def get_config(algorithm: str = "grpo"):
    c = ml_collections.ConfigDict()
    c.job = "online_rl"
    c.seed = 0
    c.data = ml_collections.ConfigDict({
        "split": "instance",
        "train_seed_range": (0, 40),
        "test_seed_range": (1000, 1020),
        "difficulties": ("easy", "medium"),
        "max_optimal_steps": 3,
        "templates": ("messages.open_thread", "music.play", "tasks.complete", "clock.alarm_toggle",
                      "expenses.amount", "settings.storage_answer", "settings.wifi_on", "tasks.high_priority"),
        "num_train_episodes": 160,
        "num_test_episodes": 120,          # held-out online tasks (≥ 100 for the CI claims)
        "resolution": (112, 252),
    })
    c.init = init_block()  # init.checkpoint_dir: a stage's checkpoints to start from; "" = run SFT first
    # the quickstart's tiny model and UI-text prompt (element indices, compact history), so its checkpoints fit
    quick = sibling_recipe(__file__, "quickstart").get_config()
    c.model, c.prompt = quick.model, quick.prompt
    c.sft = sft_block()
    c.sft.num_steps = 120
    c.sft.batch_size = 16
    c.sft.micro_batch_size = 8
    c.sft.learning_rate = 2e-3
    c.sft.warmup_steps = 20
    c.sft.checkpoint_every = 60

    c.online = online_block(algorithm)
    c.online.iterations = 12
    c.online.episodes_per_iteration = 8
    c.online.num_rollouts = 4
    c.online.max_steps = 6
    c.online.learning_rate = 3e-4
    c.online.micro_batch_size = 16
    c.online.kl_coef = 0.05               # AWG β
    c.online.checkpoint_every = 4
    c.online.curriculum_switch_iterations = (4, 8)

    # the reward model's prompt settings (configs/reward_model.py's rm.model): read when online.reward = rm,
    # online.step_reward = prm or online.critic_init = rm score with online.rm_checkpoint_dir
    c.rm = ml_collections.ConfigDict({"model": sibling_recipe(__file__, "reward_model").get_config().rm.model})

    c.env = env_block()
    c.env.n_envs = 8
    c.env.resolution = (112, 252)
    c.env.health_interval_s = 0.0
    c.eval = ml_collections.ConfigDict({"max_steps": 6})
    c.eval.save_trajectories = SAVE_TRAJECTORIES  # held-out episodes kept for python -m gui_jax.view
    return c
