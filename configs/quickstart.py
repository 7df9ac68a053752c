"""Quickstart: the shipped pretrained base (builtin:tiny-base) on PhoneSim, end to end on 2 CPU cores.

expert episodes (instance split, ten easy templates in six apps, 3-4 expert steps) → SFT → UI-S1 semi-online RL,
with SOP, step metrics and online success on 440 held-out tasks after each stage (results.md: the table with
95 % intervals and paired tests, and successes per template; results.json "profile": time and peak memory
per stage). `--config.model.checkpoint=` runs the same from random weights (the tiny preset).

    python -m gui_jax.main --config configs/quickstart.py [--workdir runs/quickstart]
"""
import ml_collections

from gui_jax.train.config_blocks import init_block, model_block, prompt_block, rl_block, sft_block


def get_config():
    c = ml_collections.ConfigDict()
    c.job = "quickstart"
    c.seed = 0
    c.offline_rl_baseline = False
    c.semi_online_rl = True     # False: SFT and the offline-RL baseline, if on; both False: SFT alone
    c.reasoning_sft = False     # True: MobileRL's reasoning warm-up (the `reasoning` block) between SFT and RL

    c.data = ml_collections.ConfigDict({
        "split": "instance",               # instance | template | app (docs/algorithms.md §12)
        # Many distinct training tasks: with 136 episodes the tiny model memorises them (train
        # grounding 1.00, held-out 0.13 after 1600 SFT steps); it has to learn the rule instead.
        "train_seed_range": (0, 400),
        "test_seed_range": (1000, 1060),   # 440 held-out tasks: Wilson half-width <= 0.05, paired tests resolve ~3 points
        "difficulties": ("easy",),
        "max_optimal_steps": 4,
        # Ten templates in six apps: open a named thread, play a named song, toggle a named alarm, complete a
        # named task (the look-up the base was pretrained on), and read a named row's value (answer tasks).
        # Empty = every template that passes the filters above.
        "templates": ("messages.open_thread", "messages.last_message", "music.play", "music.artist",
                      "clock.alarm_toggle", "tasks.complete", "tasks.priority", "expenses.amount",
                      "settings.storage_answer", "settings.model_answer"),
        # UI-S1's premise: an SFT start that breaks down on its own history leaves semi-online RL room (with all
        # 1,426 expert episodes of this split, SFT left RL nothing to find). From the T3a base 500 left it none in
        # one seed of two (0.805 -> 0.793) and 300 too (0.784 -> 0.802, p 0.15); 150: RL's gain p <= 0.009 in 3 seeds,
        # and from the G2 base 0.795 -> 0.883 over seeds 0-2, each p <= 1e-05 (quickstart_from_base.md, last section)
        "num_train_episodes": 150,
        # semi-online RL's tasks: the first N of the same selection, the SFT's first (0 = the SFT's alone).
        # 1,426 = every train task of this split: RL on tasks SFT fitted found nothing (-0.005, p 0.86), on these
        # +0.014 (p 0.39; experiments/results/quickstart_from_base.md)
        "rl_train_episodes": 1426,
        "rl_unseen_only": False,           # True: RL draws only the pool's 1,276 tasks SFT never saw
        # >1: each train instance again with other train seeds (same goal, another screen, its target
        # elsewhere), up to this many episodes per instance; 1 = one screen per goal
        "train_screens_per_instance": 1,
        "num_test_episodes": 440,
        "resolution": (112, 252),          # screenshots (multiples of 28: the processor keeps them)
        "episode_workers": 2,              # its 1,866 expert episodes on both cores (the same files as on one)
    })

    c.model = model_block("tiny")
    # The base gui_jax pretrains and ships (gui_jax/models/assets/builtin/tiny_base/README.md): tap / read the
    # named row of a screen. '' = the tiny preset from random weights.
    c.model.checkpoint = "builtin:tiny-base"
    # The longest expert response of this mix is 36 tokens with its end token (answer 'Running 10 minutes late');
    # at 24 it was cut and 3 of the 440 held-out tasks could not be solved (the job warns when responses are cut)
    c.model.max_new_tokens = 40
    # A rollout call is 8 tasks x 4 rollouts = 32 rows: buckets 1, 4, 16, 32 fit it, where 64 padded it to 64
    # rows (1.8x slower: experiments/results/sampler_copies_benchmark.json)
    c.model.sample_batch_size = 32
    # A rollout call prefills its 8 distinct prompts (4 rollouts share each screen): powers of 4 padded them to
    # 16 rows
    c.model.sample_batch_buckets = "powers_of_2"
    # prefill peak ~0.6 GB over the model instead of ~1.9 at 64 x 768 tokens; 64, not 128, so a ~165-token prompt
    # fills a 192 bucket (3 chunks) instead of 256: a rollout call 1.3x faster (benchmarks/sampler_copies.py)
    c.model.prefill_chunk = 64

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
    # answers written " Sep 8", with the screen's tokens for the value (` S|ep`, not `S|ep`): the base was pretrained
    # so (its gui_jax_export.json records it; a start in the other format is refused, naming this field)
    c.prompt.answer_spaced = True

    # init.checkpoint_dir: another run's stage checkpoints (e.g. runs/quickstart/sft/checkpoints) replace the SFT
    c.init = init_block()
    c.sft = sft_block()
    # 350 steps, packed (16 steps into 9-13 rows of 512) with the losses of padded rows. From the spaced base 400
    # steps left RL no room (0.775 -> 0.791, p 0.21) and 300 undertrained the reads (0.616); 350 + 48 RL
    # iterations: every seed's RL gain p < 0.005 (experiments/results/quickstart_from_base.md, last section)
    c.sft.num_steps = 350
    c.sft.batch_size = 16
    c.sft.packing = True
    c.sft.row_length = 512
    c.sft.micro_batch_size = 6              # rows per micro-batch
    # 9 rows: 5 + 4, not 6 + 6 with 3 padded; the 5 % of steps over 512 tokens in rows of 768 apart, instead of
    # padding five full rows to 768 (0.50 s an update against 0.68: benchmarks/sft_packing.py)
    c.sft.micro_rows = "even"
    c.sft.learning_rate = 6e-4              # from the base; 2e-3 suits random weights
    c.sft.schedule = "cosine"
    c.sft.warmup_steps = 20
    c.sft.checkpoint_every = 100

    c.rl = rl_block()
    c.rl.require_thought = False          # the SFT targets carry no thought (ui_s1 would require one)
    # 48: the time the 50 SFT steps gave up (~3 s an iteration alone on 2 cores); the gain was still rising at 40
    # (train reward over three seeds) and grows with informative groups trained (quickstart_from_base.md)
    c.rl.iterations = 48
    c.rl.episodes_per_iteration = 8
    c.rl.num_rollouts = 4
    c.rl.learning_rate = 1e-4
    c.rl.dynamic_sampling_eta = 0.1      # the tiny policy's early returns vary less than a 7B's
    c.rl.dynamic_sampling_max_tries = 3
    c.rl.packing = True
    c.rl.row_length = 512
    c.rl.micro_batch_size = 6               # packed rows per micro-batch
    c.rl.kl_coef = 1e-4
    # One on-policy mini-batch: steps every rollout took alike cancel and are not trained; the same policy
    # gradient, the update 2x faster (experiments/results/rl_update_benchmark.json)
    c.rl.drop_cancelled = True
    # UI-S1's matcher takes any piece of the expert's answer as a match; from the base, 120 iterations on it
    # taught the policy to answer "The" for "The meeting moved to Friday" (online SR 0.677 -> 0.589):
    # experiments/results/quickstart_from_base.md. The reward asks for the whole answer.
    c.rl.text_match = "exact"
    c.rl.checkpoint_every = 4

    # MobileRL's reasoning SFT (docs/algorithms.md §13): thoughts kept where the action matches the expert, then
    # fine-tuned on. The base never writes thoughts, so round 0 takes PhoneSim's descriptions of the expert steps
    # ("tap Quiet Fire in Music") in place of the paper's instruct model; later rounds sample the policy's own.
    # A thought makes responses ~6 tokens longer (up to ~40): raise model.max_new_tokens to 48 with it. Off by
    # default: from the quickstart's SFT it lowered online SR 0.705 -> 0.386 (experiments/results/reasoning_sft.md).
    c.reasoning = ml_collections.ConfigDict({
        "rounds": 2,
        "samples_per_step": 4,
        "temperature": 1.0,
        "seed": 0,
        "seed_thoughts": "describe",
        "init_checkpoint": "",   # the reasoning_sft job's start (the quickstart's stage starts from its SFT)
        "sft": sft_block(),
    })
    for k in ("batch_size", "packing", "row_length", "micro_batch_size", "micro_rows", "schedule"):
        c.reasoning.sft[k] = c.sft[k]
    c.reasoning.sft.num_steps = 150
    c.reasoning.sft.learning_rate = 3e-4
    c.reasoning.sft.warmup_steps = 10
    c.reasoning.sft.checkpoint_every = 50

    c.eval = ml_collections.ConfigDict({
        # the base before SFT never writes this prompt's answers; evaluating it costs ~2 min
        "before_training": False,
        "step_metrics": True,
        "online_trials": 1,
        "online_temperature": 1.0,
        "max_steps": 6,
        # its calls are length-sorted and mostly full: padding the rest to 32 rows compiles one program per
        # prompt length, not one per length and batch bucket
        "sample_batch_buckets": "full",
    })
    return c
