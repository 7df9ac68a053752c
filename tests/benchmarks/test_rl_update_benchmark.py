"""benchmarks/rl_update.py builds the groups dynamic sampling keeps: every step but the look-up identical across
rollouts (its copies cancel), the look-up split between two answers."""
import ml_collections
import numpy as np

from benchmarks.rl_update import group_samples
from gui_jax.rl.agent import Agent
from gui_jax.rl.batch import drop_cancelled, merge_duplicates
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.config_blocks import model_block, rl_block

from support.fake_policy import make_episode


def test_groups_cancel_every_step_but_the_look_up():
    m = model_block()
    m.num_hidden_layers, m.vision_depth = 1, 1
    agent = Agent(ml_collections.ConfigDict({"model": m}), seed=0)
    episodes = [make_episode(g, n=3, size=(56, 112)) for g in ("Turn on Wi-Fi", "Open the clock")]
    pcfg = PromptConfig(observation="ui_text", target="element", history_turns=1)
    samples = group_samples(agent, episodes, pcfg, rl_block(), rollouts=4)
    assert len(samples) == 2 * 3 * 4
    kept, dropped = drop_cancelled(merge_duplicates(samples, across_signs=True))
    assert dropped == 2 * 2 and len(kept) == 2 * 2  # per group: 2 steps cancel, the look-up keeps 2 answers
    assert sorted(np.sign([s.advantage for s in kept]).tolist()) == [-1, -1, 1, 1]
    assert all(s.weight == 2.0 for s in kept)
    # π_old is the model itself: the samples are on-policy
    assert all(s.old_logprobs is not None and (s.old_logprobs < 0).all() for s in samples)
