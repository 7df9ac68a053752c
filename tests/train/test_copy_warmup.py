"""The look-back warm-up (train/copy_warmup.py): exact batch structure, the token pool, that training on it
forms look-back (accuracy from ~0 to well above chance), and that a resumed SFT stage skips it."""
import ml_collections
import numpy as np
import pytest

from gui_jax.models.qwen2_5_vl.config import tiny
from gui_jax.train.copy_warmup import copy_warmup, induction_batch, maybe_copy_warmup, token_pool


def test_batch_structure_repeat_and_both_recall_directions():
    pool = np.arange(500, 900)
    ids, tgt = induction_batch(np.random.default_rng(0), pool, batch=6, length=24)
    assert ids.shape == tgt.shape == (6, 24) and ids.dtype == np.int32
    assert np.isin(ids, pool).all()
    h = 12
    for b in range(6):
        kind = b % 3
        if kind == 0:   # repeat: the second half is the first; every repeated token but the first is a target
            assert (ids[b, h:] == ids[b, :h]).all() and len(set(ids[b, :h])) == h
            assert tgt[b].tolist() == [0.0] * (h + 1) + [1.0] * (h - 1)
            continue
        pairs = ids[b, :h].reshape(-1, 2)
        keys, vals = (pairs[:, 0], pairs[:, 1]) if kind == 1 else (pairs[:, 1], pairs[:, 0])
        table = dict(zip(keys.tolist(), vals.tolist()))
        assert len(table) == h // 2                                     # distinct keys
        queries = ids[b, h:].reshape(-1, 2)
        assert all(table[k] == v for k, v in queries.tolist())          # each query's value is its key's
        assert tgt[b].tolist() == [0.0] * h + [0.0, 1.0] * (h // 2)     # only the values are targets
    with pytest.raises(ValueError, match="even and >= 8, got 9"):
        induction_batch(np.random.default_rng(0), pool, 3, 9)


def test_token_pool_stops_below_the_special_tokens():
    cfg = tiny()
    pool = token_pool(cfg)
    specials = {cfg.text.bos_token_id, cfg.text.eos_token_id, cfg.image_token_id, cfg.video_token_id,
                cfg.vision_start_token_id, cfg.vision_end_token_id}
    assert pool[0] == 300 and pool[-1] == min(specials) - 1 and not set(pool.tolist()) & specials


class _Agent:
    """The parts of rl.agent.Agent the warm-up uses, around a tiny text model."""

    def __init__(self):
        from flax import nnx
        from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration
        model = Qwen25VLForConditionalGeneration(tiny(), rngs=nnx.Rngs(0))
        self.graphdef, self.params, self.rest = nnx.split(model, nnx.Param, ...)

    def model(self):
        from flax import nnx
        return nnx.merge(self.graphdef, self.params, self.rest)

    def set_params(self, params):
        self.params = params


def test_warmup_forms_look_back_and_a_resumed_stage_skips_it():
    agent = _Agent()
    info = copy_warmup(agent, 150, batch=12, length=32, learning_rate=3e-3, seed=0, progress=False,
                       pool=np.arange(300, 364))
    # chance is 1 / 64; the warm-up reaches look-back on a held-out batch
    assert info["lookback_acc_before"] < 0.05 and info["lookback_acc_after"] > 0.3, info
    cfg = ml_collections.ConfigDict({"copy_warmup_steps": 5, "copy_warmup_batch": 6, "copy_warmup_length": 16,
                                     "learning_rate": 1e-3, "seed": 0})
    before = agent.params
    assert maybe_copy_warmup(agent, cfg, resuming=True) is None and agent.params is before
    cfg.copy_warmup_steps = 0
    assert maybe_copy_warmup(agent, cfg, resuming=False) is None and agent.params is before
