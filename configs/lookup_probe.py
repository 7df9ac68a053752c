"""The synthetic look-up probe (gui_jax/train/lookup_probe.py): can the tiny text stack learn to find the line
a goal names, from random weights, and does it work on words it never saw? Token ids only; minutes on 2 cores.

    python -m gui_jax.main --config configs/lookup_probe.py [--config.probe.lines=24 --config.probe.key_words=2 ...]

Writes <workdir>/results.json (the curve), metrics.jsonl, TensorBoard logs and training_curves.png.
Defaults: the row of experiments/results/lookup_probe.md where the plateau breaks (4-line screens, one-word
labels, the index right after its label).
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
    c.probe.update(lines=4, queries=4, key_words=1, order="adjacent", learning_rate=1e-3, warmup=100,
                   steps=3000, eval_every=250)
    return c
