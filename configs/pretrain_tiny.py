"""Pretrain the tiny base model (Qwen2.5-VL architecture) on synthetic phone screens in the agent's prompt
format: tap the named element, read a row's value, state questions, toggles, home-screen apps, with next-token
loss on the screen text (gui_jax/train/pretrain.py, gui_jax/train/pretrain_data.py); screens from generic
layouts and (pretrain.app_pages) PhoneSim's own app pages with generator labels (gui_jax/train/pretrain_apps.py).

    python -m gui_jax.main --config configs/pretrain_tiny.py --workdir runs/pretrain_tiny

Long runs are normal: re-run the same command to resume. Labels come from a generator whose words are disjoint
from PhoneSim's tasks; the reading accuracy is measured on a label pool pretraining never samples.
"""
import ml_collections

from gui_jax.train.attention_pointers import DEFAULT_LAYOUT
from gui_jax.train.config_blocks import model_block, sibling_recipe


def get_config():
    c = ml_collections.ConfigDict()
    c.job = "pretrain"
    c.seed = 0
    c.model = model_block("tiny")
    # the tiny agent's prompt (configs/quickstart.py's block: answers spaced as the shipped base writes them since
    # update 24,474; its card's earlier phases ran with answer_spaced=False), with room for 40-line screens
    c.prompt = sibling_recipe(__file__, "quickstart").get_config().prompt
    c.prompt.max_ui_lines = 40
    c.pretrain = ml_collections.ConfigDict({
        "num_steps": 20000,
        "batch_size": 32,
        "micro_batch_size": 4,          # packed rows per micro-batch (8 left half of the computed rows padding)
        "learning_rate": 1e-3,
        "warmup_steps": 200,
        "schedule": "constant",         # constant | cosine | wsd (constant, then cosine to 0 over decay_steps)
        # wsd: the updates at the end of num_steps over which the rate anneals; a shipped snapshot is a short
        # annealed branch of the constant-rate run (copy its workdir, raise num_steps by decay_steps)
        "decay_steps": 0,
        "weight_decay": 0.0,
        "max_grad_norm": 1.0,
        "packing": True,                # several items per row (segment ids)
        "row_length": 512,              # tokens per packed row (attention cost grows with its square)
        # w · next-token loss on the prompt (mostly the screen text); 0: the look-up probe gained nothing from
        # it (experiments/results/lookup_probe.md row 10) and it costs a vocabulary-wide head on every token
        "prompt_loss_weight": 0.0,
        "prompt_loss_chunk": 1024,
        # goals answered per screen: the first in the agent's prompt, the others as further chat turns, all
        # trained (dense supervision: one answer per screen is one supervised look-up per ~100-400 tokens)
        "goals_per_screen": 1,
        # objective:weight (tap, read, state, home, screen_text, toggle, launch: which app serves a goal, on
        # PhoneSim's home screen -> open(text=app), gui_jax/train/pretrain_launch.py)
        "mix": "tap:0.45,read:0.25,state:0.1,home:0.2",
        # how launch items phrase goals: topics (generic frames x each app's topic words) | intents (half of them
        # requests phrased the ways people ask an app: questions, edits, counts; train/pretrain_launch.py) | pages
        # (as intents, and for Messages, Music, Clock, Tasks half are the goals their pretraining pages pose) |
        # answers (as pages, the pages' answer questions among them: Expenses too)
        "launch_goals": "topics",
        # label kind:weight for every stage (words, name, phrase, number, price, time, date, percent, pieces:
        # made-up words from the tokenizer's pieces, so tokens outside the word lists are trained too; tokens:
        # made-up words each led by a uniformly drawn word-start token, also as shared-word targets, at their
        # share of the weights); '' = pretrain_labels.DEFAULT_LABEL_KINDS
        "label_kinds": "",
        # probability that a tap / read / state / toggle item is drawn on one of PhoneSim's own app pages
        # (Messages, Music, Clock alarms, Tasks: gui_jax/train/pretrain_apps.py) with generator labels, instead
        # of a generic layout; 0 = generic layouts only
        "app_pages": 0.0,
        # app pages also ask the read questions of PhoneSim's answer templates ("What did {L} say in their most
        # recent message?") and an Expenses page serves reads ("How much did I spend on '{L}'?"); False: unchanged
        "page_answers": False,
        # share of message / phrase / words values (the text a read copies) written as sentences of token words
        # ("photos Friday kept?"), so answers write word-start tokens no word list has; 0 = unchanged
        "token_values": 0.0,
        # Music and Tasks pages also ask PhoneSim's questions whose answer is part of a row's line ("Who is the
        # artist of the song '{L}'?" -> the artist of "artist - m:ss"; a task's priority); False = unchanged
        "part_answers": False,
        # probability that a goal carries the agent's "Earlier steps:" lines (the app opened; in half of them the
        # goal's own action last, answered by terminate); 0 = unchanged (0.3 in a 250-update anneal leaked terminate
        # into answers: experiments/results/pretrain_m1.md, section F2)
        "history": 0.0,
        # with history: only an item's first goal draws earlier steps, and an item that has them asks that goal
        # alone, as the agent's prompt does (among 8 goals the first goal's answer-or-stop step was not learnt:
        # lookup_probe done_share, experiments/results/pretrain_m1.md); False = unchanged
        "history_alone": False,
        # with history: the loss weight of the one response token that decides between stopping (terminate) and
        # acting in an item with earlier steps; 1 = as every token (unchanged)
        "decision_weight": 1.0,
        # the loss weight of every goal's action-name token (click / answer / open / terminate), the one token that
        # decides between tapping and reading; 1 = as every token (unchanged)
        "action_weight": 1.0,
        # probability that a read item's label words (every word of the screen's labels and values, in the goals
        # and answers too) are swapped for fresh made-up words of 1-3 pieces, one draw per item
        # (train/pretrain_relabel.py): the base read train-pool labels 0.93 and held-out ones 0.85 (memorised
        # token sequences, experiments/results/pretrain_m1.md); 0 = unchanged
        "relabel": 0.0,
        # probability that a read goal is a command without "?" ("Read the price of X.", train/pretrain_labels.py
        # READ_IMPERATIVE): the bases clicked on base_eval's one such phrasing (~90 % of its items), the "?" deciding
        # between answering and tapping; 0 = unchanged
        "read_imperative": 0.0,
        # stages min-max@p:steps (p: distractors share a word with the target); the last runs to the end
        "curriculum": "4-8@0:2000,4-16@0.3:4000,8-24@0.6:6000,12-40@1",
        "eval_every": 250,              # updates between reading evaluations (held-out labels)
        "eval_items": 256,
        # > 0 (with pointer_weight): also score each supervised hop's head on this many held-out tap (and read)
        # items at every evaluation, logged as circuit/<hop> (train/pointer_find.py): which part of the look-up lags
        "circuit_items": 0,
        "checkpoint_every": 500,
        "checkpoint_minutes": 10.0,     # also checkpoint after this much wall time
        # > 0: this run ends cleanly after this much wall time (checkpoint, reading evaluation, exported base and
        # card), e.g. inside a short accelerator lease; rerunning the command continues from the checkpoint
        "max_minutes": 0.0,
        "data_threads": 2,              # Grain read threads
        # > 0: items are generated and tokenised in this many worker processes (on an accelerator host one
        # Python thread makes ~300-500 items/s, far below what the tiny model consumes); 0 on a 2-core CPU
        "data_workers": 0,
        # > 0: + this weight x the attention cross-entropy of supervised look-up hops on tap/home items, and on
        # read items when the layout places read_match (gui_jax/train/attention_pointers.py): what made the
        # look-up learnable in the synthetic probe
        "pointer_weight": 0.0,
        # hop=layer.head for the hops index_first, index_last, label_bag, goal, match and (reading, 3 layers:
        # attention_pointers.READ_LAYOUT) row, prev_token, read_match, and read_goal (a read answer's goal rows on
        # a head of their own; without it they train goal's head); layer -1: the last; one hop per head,
        # except that goal may share label_bag's (the goal's label gathered the way each screen label is)
        "pointer_layout": DEFAULT_LAYOUT,
        # with pointer_weight: toggle items ("Turn on the 15:45 alarm.") carry the tap hops too, the match keyed on
        # the part of the switch / checkbox line the goal names; False: toggles learn from their answers alone
        "toggle_pointers": False,
        # > 0 (with pointer_weight): + this weight x the cross-entropy of the index hops' head outputs read
        # out over the digit tokens against their line's index digit (the copy circuit's first half learnt
        # directly: in the look-up probe it removed the plateau before the look-up forms)
        "index_readout_weight": 0.0,
        # > 0 (with pointer_weight and read_match in the layout): + this weight x the cross-entropy of the read_match
        # head's output read out over the whole vocabulary against the value token it copies (the read value's copy
        # learnt directly, as index_readout_weight teaches the digits')
        "value_readout_weight": 0.0,
        # > 0 (with pointer_weight): + this weight x the mean cross-entropy of the answer tokens alone (the index
        # digits, a read value's tokens), as the probe weighs its one answer token; in a multi-goal response they
        # are ~5 % of the trained tokens, so the copy after the match is otherwise a small share of the loss
        "answer_weight": 0.0,
        # how a readout scales its head's output: own (by its own RMS: the direction only) | residual (by the RMS
        # of the residual stream it joins: the head's direct share of the logits, so the copy must also be large)
        "readout_scale": "own",
        # > 0 (from random weights only): the language model's matrices start at std gain/sqrt(fan_in), not 0.02
        "init_gain": 0.0,
        "init_residual_gain": 1.0,      # with init_gain: attention o_proj and MLP down_proj start this much smaller
        "export_dtype": "bfloat16",     # the exported base's weights ('' = the params' dtype)
        # continue from a weights-only snapshot taken at this update: set model.checkpoint to the snapshot and
        # first_step to its update (the stream and the curriculum resume there; AdamW restarts with its warm-up);
        # resuming its own checkpoint, a run keeps this value (its learning-rate schedule counts from it)
        "first_step": 0,
        # a snapshot to grow into this config's larger model (more text layers: model.num_hidden_layers; a wider
        # MLP: model.intermediate_size) with the same logits at the start (models/qwen2_5_vl/grow.py); with it
        # model.checkpoint stays '' and first_step is the snapshot's update
        "grow_from": "",
        "stop_after_steps": ml_collections.config_dict.placeholder(int),
    })
    return c
