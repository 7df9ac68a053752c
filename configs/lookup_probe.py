"""The synthetic look-up probe (gui_jax/train/lookup_probe.py): can the tiny text stack learn to find the line
a goal names, from random weights, and does it work on words it never saw? Token ids only; minutes on 2 cores.

    python -m gui_jax.main --config configs/lookup_probe.py [--config.probe.lines=24 --config.probe.key_words=2 ...]

Writes <workdir>/results.json (the curve), metrics.jsonl, TensorBoard logs and training_curves.png.
Defaults: row 49 of experiments/results/lookup_probe.md, the first recipe that learns the look-up by copying
the matched line's index: 8-line screens with shuffled index tokens, words of two trained pieces (held out:
unseen piece pairs), the index before its label, both attention hops supervised (`pointer_weight`) and matrices
at 1/sqrt(fan_in) (`init_gain`); a 2-layer, 64-wide stack of the same architecture. Held-out accuracy 0.95 at
step 500 and 0.97 at 1,000 (about 4 minutes on one core).
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
    c.probe.update(lines=8, queries=4, key_words=1, word_pieces=2, train_words=(100, 400),
                   held_out_words=(100, 400), shuffle_ids=True, order="index_first", answer_token=False,
                   init_gain=1.0, pointer_weight=1.0, layers=2, hidden=64, heads=2, kv_heads=1,
                   learning_rate=1e-3, warmup=20, steps=1000, eval_every=100)
    return c
