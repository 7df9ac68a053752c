"""What a pretrained base can read: greedy tap / read accuracy on held-out synthetic screens and clicks on the
quickstart's held-out PhoneSim screens, with 95 % Wilson intervals (job base_eval).

    python -m gui_jax.main --config configs/base_eval.py --config.model.checkpoint=builtin:tiny-base
    python -m gui_jax.main --config configs/base_eval.py --config.eval.checkpoint_dir=runs/pretrain_tiny/checkpoints

The data, model and prompt blocks are the quickstart's (its templates, split and test seeds; the prompt its
agent sees), so a base meant to start the quickstart is scored on what that agent will read. The model is
model.checkpoint (a Hugging Face directory or builtin:<name>) or eval.checkpoint_dir (Orbax stage checkpoints);
eval.untrained=True scores the random model instead.
"""
import ml_collections

from gui_jax.train.config_blocks import sibling_recipe


def get_config():
    q = sibling_recipe(__file__, "quickstart").get_config()
    c = ml_collections.ConfigDict()
    c.job = "base_eval"
    c.seed = q.seed
    c.data = q.data      # the PhoneSim part reads the test side of this split (episodes cached in the workdir)
    c.model = q.model
    # the quickstart's 24 cut ~1 in 10 `read` answers (up to 31 tokens with the end token in the tiny
    # vocabularies): the base would be scored on a truncated answer. Greedy decoding stops at the end token.
    c.model.max_new_tokens = 40
    c.prompt = q.prompt  # PhoneSim prompts as the quickstart's; reading raises max_ui_lines to lines_range[1]
    c.eval = ml_collections.ConfigDict({
        "checkpoint_dir": "",    # a stage's checkpoints folder (e.g. runs/pretrain_tiny/checkpoints)
        "untrained": False,      # True: score the random model (no weights needed)
    })
    c.base_eval = ml_collections.ConfigDict({
        # 1000 items per objective: Wilson half-width ≤ 0.031 at any accuracy
        "n": 1000,
        "objectives": ("tap", "read"),   # of pretrain_data.OBJECTIVES; () = PhoneSim only
        # the pretraining curriculum's last stage (configs/pretrain_tiny.py): the largest screens, every
        # distractor sharing a word with the target
        "lines_range": (24, 40),
        "shared_word_prob": 1.0,
        # probability that an item an app page serves (tap, read, state, toggle) is drawn on one of PhoneSim's own
        # app pages with generator labels (pretrain_apps.py), as the pretraining stream does; 0 = generic layouts
        "app_pages": 0.0,
        # the label pool the synthetic items draw from: reading_eval (held out: no word pretraining sampled) |
        # train (the pretraining pool: the gap between the two is how much of a skill is memorised words)
        "label_pool": "reading_eval",
        "seed": 0,          # item seed; the pretrain job's own reading eval uses seed + 7919 (other items)
        "phonesim": True,   # also score clicks on the held-out PhoneSim screens
        # also score the answer-or-stop decision (phonesim_stop): every held-out step after the first, prompted
        # with the expert's earlier steps as the quickstart agent is; a hit stops exactly where the expert does
        "stops": False,
        # an earlier run's results.json (or its folder) on the same settings: each part paired item by item with
        # it (lost, gained, exact McNemar p) in results.json's "paired" and the table's notes
        "compare_to": "",
        # the base's attention layout (its card's pretrain.pointer_layout): also score each look-up hop's head on
        # the first attention_items (at most n) tap and read items (argmax inside the pointed range); "" = skip
        "pointer_layout": "",
        "attention_items": 200,
    })
    return c
