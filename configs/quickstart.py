"""Quickstart: the tiny agent on PhoneSim, end to end (2 CPU cores: 7-13 min by machine, SFT 0.6-1.1 s
per step, one evaluation of 209 held-out tasks 0.5-1 min; results.json "profile" has a run's stage times).

expert episodes (instance split, easy tasks) → SFT → UI-S1 semi-online RL, with SOP, step metrics
and online success on the held-out split before and after each stage.

    python -m gui_jax.main --config configs/quickstart.py [--workdir runs/quickstart]
"""
import ml_collections

from gui_jax.train.config_blocks import model_block, prompt_block, rl_block, sft_block


def get_config():
    c = ml_collections.ConfigDict()
    c.job = "quickstart"
    c.seed = 0
    c.offline_rl_baseline = False

    c.data = ml_collections.ConfigDict({
        "split": "instance",               # instance | template | app (docs/algorithms.md §12)
        # Many distinct training tasks: with 136 episodes the tiny model memorises them (train
        # grounding 1.00, held-out 0.13 after 1600 SFT steps); it has to learn the rule instead.
        "train_seed_range": (0, 400),
        "test_seed_range": (1000, 1045),   # ≥ 200 held-out tasks: Wilson half-width ≤ 0.07
        "difficulties": ("easy",),
        "max_optimal_steps": 3,
        # Six short tasks in six apps: enough examples per template for a 1.6M-parameter model
        # to learn in minutes. Empty = every template that passes the filters above.
        "templates": ("messages.open_thread", "music.play", "tasks.complete", "clock.alarm_toggle",
                      "expenses.amount", "settings.storage_answer"),
        "num_train_episodes": 1600,
        # >1: each train instance again with other train seeds (same goal, another screen, its target
        # elsewhere), up to this many episodes per instance; 1 = one screen per goal
        "train_screens_per_instance": 1,
        "num_test_episodes": 216,
        "resolution": (112, 252),          # screenshots (multiples of 28: the processor keeps them)
    })

    c.model = model_block("tiny")
    c.model.max_new_tokens = 24
    c.model.sample_batch_size = 64

    # The tiny model reads the simplified UI tree and acts by element index (MobileRL XML
    # observation, UI-Genie Set-of-Mark indices); paper recipes use screenshots + coordinates.
    c.prompt = prompt_block()
    c.prompt.observation = "ui_text"
    c.prompt.target = "element"
    c.prompt.history_turns = 0
    c.prompt.history_mode = "compact"      # earlier steps as one line each (the form the tiny model learns)
    c.prompt.system_prompt = False
    c.prompt.max_ui_lines = 24              # prompts stay ≤ 512 tokens (p95 495), one length bucket
    c.prompt.word_tokens = True             # goal words and UI labels in one token form
    c.prompt.ui_text_skip_unlabeled = True  # flag-only lines pushed 14 % of click targets past the cut
                                            # (now 1 in 40)
    c.prompt.ui_text_class = False
    c.prompt.goal_last = True

    c.sft = sft_block()
    # 400 steps. Packed (16 steps into ~9 rows of 512 tokens, in micro-batches of 6 rows) they take
    # 1.12 s each instead of 1.45 s padded, with the same losses. Fewer steps learned less: a 260-step
    # length-grouped variant lost its RL gain (experiments/results/quickstart_15min_variant.md)
    c.sft.num_steps = 400
    c.sft.batch_size = 16
    c.sft.packing = True
    c.sft.row_length = 512
    c.sft.micro_batch_size = 6              # rows per micro-batch
    c.sft.learning_rate = 2e-3
    c.sft.warmup_steps = 20
    c.sft.checkpoint_every = 100

    c.rl = rl_block()
    c.rl.require_thought = False          # the SFT targets carry no thought (ui_s1 would require one)
    c.rl.iterations = 10
    c.rl.episodes_per_iteration = 8
    c.rl.num_rollouts = 4
    c.rl.learning_rate = 3e-4
    c.rl.dynamic_sampling_eta = 0.1      # the tiny policy's early returns vary less than a 7B's
    c.rl.dynamic_sampling_max_tries = 3
    c.rl.packing = True
    c.rl.row_length = 512
    c.rl.micro_batch_size = 6               # packed rows per micro-batch
    c.rl.kl_coef = 1e-4
    c.rl.checkpoint_every = 4

    c.eval = ml_collections.ConfigDict({
        # the untrained tiny model scores 0 on every metric; evaluating it costs ~3 min of the 15
        "before_training": False,
        "step_metrics": True,
        "online_trials": 1,
        "online_temperature": 1.0,
        "max_steps": 6,
    })
    return c
