"""The synthetic look-up probe (gui_jax/train/lookup_probe.py): can the tiny text stack learn to find the line
a goal names, from random weights, and does it work on words it never saw? Token ids only; minutes on 2 cores.

    python -m gui_jax.main --config configs/lookup_probe.py [--config.probe.lines=24 --config.probe.key_words=2 ...]

Writes <workdir>/results.json (the curve), metrics.jsonl, TensorBoard logs and training_curves.png.
Defaults: row 76 of experiments/results/lookup_probe.md, the recipe tests/train/test_learns_lookup.py holds
CI to: the pretrained base's text stack (3 layers, hidden 128, 4 heads / 2 kv heads) from random weights on
24-line screens of two-word labels whose distractors share a word, shuffled index tokens, words of two trained
pieces (held out: unseen piece pairs), the index before its label; the look-up hops supervised
(`pointer_weight`, the label-bag head, the match hop in layer 1), the index readout, matrices at
1/sqrt(fan_in) (`init_gain`), 8 goals per screen, batch 8, and the rate annealed from 4e-3 to 0 over the 700
updates (at a constant rate the same stack sat at 0.89-0.93, rows 62-67). Held-out accuracy 0.973 / 0.959
(seeds 0 / 1) at update 700, ~3.6 minutes on 2 cores.
"""
import dataclasses

import ml_collections

from gui_jax.train.lookup_probe import LookupProbeConfig


def get_config():
    c = ml_collections.ConfigDict()
    c.job = "lookup_probe"
    c.seed = 0
    # every field of LookupProbeConfig (its declaration holds the default and the one-line doc) but the seed
    c.probe = ml_collections.ConfigDict({f.name: f.default for f in dataclasses.fields(LookupProbeConfig)
                                         if f.name != "seed"})
    c.probe.update(lines=24, queries=8, key_words=2, word_pieces=2, train_words=(100, 400),
                   held_out_words=(100, 400), shuffle_ids=True, order="index_first", answer_token=False,
                   init_gain=1.0, pointer_weight=1.0, pointer_label_start=True, pointer_label_bag=True,
                   index_readout_weight=1.0, layers=3, match_layer=1, hidden=128, heads=4, kv_heads=4, batch=8,
                   learning_rate=4e-3, final_lr_fraction=0.0, warmup=20, steps=700, eval_every=100)
    return c
