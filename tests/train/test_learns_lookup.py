"""The base's shape learns the screen look-up from random weights, on screens and words it never saw.

configs/lookup_probe.py's recipe (the pretrained base's text stack: the tiny preset at the base's depth) trains on
the synthetic look-up alone — 24-line screens, two-word labels whose distractors share a word with the target,
index tokens shuffled per screen — and must answer held-out screens built only of unseen words at ≥ 95 %.
A regression in the attention path, the positions, the initialisation or the pointer supervision that stops
the look-up from forming fails here (a from-scratch decoder stays at chance on this task without the pointers:
experiments/results/lookup_probe.md).
"""
import dataclasses
import json
import pathlib

from gui_jax.jobs import load_config
from gui_jax.jobs.lookup_probe import probe_config
from gui_jax.train.lookup_probe import run_probe, word_ids

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "lookup_probe.py"
BASE = ROOT / "gui_jax" / "models" / "assets" / "builtin" / "tiny_base" / "config.json"


def test_the_base_shape_learns_the_24_line_lookup_on_unseen_words():
    cfg = probe_config(load_config(str(CONFIG)))
    text = json.loads(BASE.read_text())["text_config"]          # the shipped base's text stack
    assert (cfg.model, cfg.layers, cfg.hidden, cfg.heads, cfg.kv_heads, 3 * cfg.hidden) == (
        "tiny", text["num_hidden_layers"], text["hidden_size"], text["num_attention_heads"],
        text["num_key_value_heads"], text["intermediate_size"])
    assert (cfg.lines, cfg.key_words, cfg.shared_words, cfg.shuffle_ids, cfg.curriculum) == (24, 2, True, True, "")
    held_out, trained = (set(word_ids(cfg, h).tolist()) for h in (True, False))
    assert held_out and trained and not held_out & trained        # no held-out word is ever trained
    cfg = dataclasses.replace(cfg, eval_every=cfg.steps, eval_screens=512)   # one held-out evaluation, at the end
    result = run_probe(cfg, log=lambda _: None)
    last = result["curve"][-1]
    assert last["lines"] == 24 and last["held_out_acc"] >= 0.95, result["curve"]
