"""Sequence packing: several trained steps per row give the same per-step losses as one step per row."""
import dataclasses

import jax
import numpy as np
import pytest
from flax import nnx

from gui_jax.models.qwen2_5_vl.config import preset
from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration
from gui_jax.rl.batch import (DEFAULT_LENGTH_BUCKETS, PACKED_MIN_RESPONSE, TrainSample, build_batch,
                              make_micro_batches, model_forward_logprobs, pack_rows, split_packed_rows)
from gui_jax.rl.losses import combine_loss

jax.config.update("jax_default_matmul_precision", "highest")
PAD = 0
# (text tokens before, images as (t, h, w) patch grids, text tokens after, response tokens)
SPECS = [(5, [(1, 4, 4)], 3, 4), (7, [], 0, 6), (2, [(1, 4, 8), (1, 8, 4)], 4, 3), (9, [(1, 4, 4)], 1, 5),
         (3, [], 2, 2)]


def _cfg():
    c = preset("tiny")
    return c.replace(text=dataclasses.replace(c.text, num_hidden_layers=2),
                     vision=dataclasses.replace(c.vision, depth=2, fullatt_block_indexes=(1,)))


def _samples(cfg, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for before, grids, after, resp in SPECS:
        ids = list(rng.integers(1, 200, before))
        for t, h, w in grids:
            ids += [cfg.vision_start_token_id] + [cfg.image_token_id] * (t * h * w // 4) + [cfg.vision_end_token_id]
        ids += list(rng.integers(1, 200, after))
        n_patch = sum(t * h * w for t, h, w in grids)
        out.append(TrainSample(
            np.array(ids), rng.integers(1, 200, resp), advantage=float(rng.normal()),
            old_logprobs=-rng.random(resp).astype(np.float32), ref_logprobs=-rng.random(resp).astype(np.float32),
            pixel_values=rng.standard_normal((n_patch, cfg.vision.patch_dim)).astype(np.float32) if grids else None,
            image_grid_thw=np.array(grids) if grids else None))
    return out


def test_pack_rows_first_fit_decreasing():
    lens = [9, 4, 7, 3, 5, 2]
    samples = [TrainSample(np.ones(n - 1), np.ones(1)) for n in lens]
    rows = pack_rows(samples, 12)
    assert rows == [[0, 3], [2, 4], [1, 5]]  # 9+3, 7+5, 4+2
    assert sorted(i for r in rows for i in r) == list(range(len(lens)))
    # Capacity below a sample's length: that sample gets a row of its own, the rest still fit.
    assert all(len(r) == 1 or sum(lens[i] for i in r) <= 6 for r in pack_rows(samples, 6))
    assert pack_rows(samples, 6) == [[0], [2], [4], [1, 5], [3]]


def test_packed_segments_hold_the_unpacked_rows():
    """Every segment of a packed row carries exactly its unpacked row: ids, per-segment M-RoPE positions, loss
    mask, advantages, old / ref logprobs; images keep row-major order."""
    cfg = _cfg()
    samples = _samples(cfg)
    plain = build_batch(samples, cfg, pad_id=PAD)
    packed = build_batch(samples, cfg, pad_id=PAD, packing=True, row_length=64)
    assert packed["input_ids"].shape[0] < plain["input_ids"].shape[0]
    rows = pack_rows(samples, 64)
    seen = 0
    for r, group in enumerate(rows):
        at = 0
        for k, i in enumerate(group):
            n = len(samples[i])
            sl = slice(at, at + n)
            assert (packed["segment_ids"][r, sl] == k + 1).all()
            for key in ("input_ids", "loss_mask", "advantages", "old_logp", "ref_logp", "attention_mask"):
                np.testing.assert_array_equal(packed[key][r, sl], plain[key][i, :n], err_msg=key)
            np.testing.assert_array_equal(packed["position_ids"][:, r, sl], plain["position_ids"][:, i, :n])
            resp = packed["loss_mask"][r, sl] > 0
            assert (packed["step_ids"][r, sl][resp] == k).all() and (packed["step_ids"][r, sl][~resp] == -1).all()
            at += n
            seen += 1
        assert (packed["segment_ids"][r, at:] == 0).all() and not packed["attention_mask"][r, at:].any()
    assert seen == len(samples)
    # Same real patches; order follows the packed rows.
    order = [i for g in rows for i in g if samples[i].pixel_values is not None]
    want = np.concatenate([samples[i].pixel_values for i in order])
    np.testing.assert_array_equal(packed["pixel_values"][:want.shape[0]], want)
    assert not packed["pixel_values"][want.shape[0]:].any()


@pytest.fixture(scope="module")
def forward_logprobs():
    """(samples, plain batch, packed batch, their token logprobs) from one jitted tiny model."""
    cfg = _cfg()
    graphdef, state = nnx.split(Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(0)))
    fwd = jax.jit(lambda st, b: model_forward_logprobs(nnx.merge(graphdef, st), b)[0])
    samples = _samples(cfg, seed=1)
    plain = build_batch(samples, cfg, pad_id=PAD)
    packed = build_batch(samples, cfg, pad_id=PAD, packing=True, row_length=64)
    return samples, plain, packed, np.asarray(fwd(state, plain)), np.asarray(fwd(state, packed))


@pytest.mark.parametrize("agg", ["token_mean", "step_token_mean"])
def test_packed_rows_give_the_same_per_step_losses(forward_logprobs, agg):
    samples, plain, packed, lp_plain, lp_packed = forward_logprobs
    rows = pack_rows(samples, 64)
    per_step = []
    for r, group in enumerate(rows):
        at = 0
        for i in group:
            n = len(samples[i])
            m = plain["loss_mask"][i, :n] > 0
            np.testing.assert_allclose(lp_packed[r, at:at + n][m], lp_plain[i, :n][m], atol=1e-5, rtol=0)
            per_step.append((i, r, at, n))
            at += n
    # Per-step loss: the loss restricted to one step's tokens (same array shapes: one compile per layout).
    loss = jax.jit(lambda lp, b, m: combine_loss(lp, b["old_logp"], b["advantages"], m, ref_logp=b["ref_logp"],
                                                 step_ids=b["step_ids"], kl_coef=0.1, agg=agg)[:2])
    keys = ("old_logp", "advantages", "ref_logp", "step_ids")

    def step_loss(batch, lp, row, start, n):
        m = np.zeros_like(batch["loss_mask"])
        m[row, start:start + n] = batch["loss_mask"][row, start:start + n]
        s, d = loss(lp, {k: batch[k] for k in keys}, m)
        return float(s) / float(d)

    for i, r, at, n in per_step:
        np.testing.assert_allclose(step_loss(packed, lp_packed, r, at, n), step_loss(plain, lp_plain, i, 0, n),
                                   atol=1e-5)
    # And the whole-batch loss (sum, denominator) is the same.
    (s1, d1) = loss(lp_plain, {k: plain[k] for k in keys}, plain["loss_mask"])
    (s2, d2) = loss(lp_packed, {k: packed[k] for k in keys}, packed["loss_mask"])
    assert float(d1) == float(d2)
    np.testing.assert_allclose(float(s2), float(s1), atol=1e-5)


def test_micro_batches_have_fixed_rows_and_bucketed_shapes():
    cfg = _cfg()
    samples = _samples(cfg) * 3
    micro = make_micro_batches(samples, cfg, pad_id=PAD, micro_batch_size=2, packing=True, row_length=64)
    assert all(mb["input_ids"].shape[0] == 2 for mb in micro)
    assert sum(int(mb["loss_mask"].sum()) for mb in micro) == sum(s.response_ids.size for s in samples)
    assert all(mb["input_ids"].shape[1] in DEFAULT_LENGTH_BUCKETS for mb in micro)
    # one shape for every micro-batch whose rows fit row_length, the fullest or not (one compiled program)
    assert {mb["input_ids"].shape for mb in micro} == {(2, 64)}
    assert {mb["target_positions"].shape for mb in micro} == {(2, PACKED_MIN_RESPONSE)}
    assert sum(int((mb["segment_ids"] > 0).any(1).sum()) for mb in micro) < len(samples)  # rows shared
    with pytest.raises(ValueError, match="row_length"):
        make_micro_batches(samples, cfg, pad_id=PAD, micro_batch_size=2, packing=True)


def test_even_split_balances_rows_and_keeps_over_long_rows_apart():
    # 9 rows that fit 512 -> 5 + 4 (not 6 + 3 padded to 6); the 600-token row in a micro-batch of its own
    fills = [100, 200, 300, 400, 450, 480, 500, 500, 510, 600]
    assert split_packed_rows(fills, 6, 512) == [[0, 1, 2, 3, 4], [5, 6, 7, 8], [9]]
    assert split_packed_rows([500] * 12, 6, 512) == [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]]
    assert split_packed_rows([500] * 13, 6, 512) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12]]
    assert split_packed_rows([500] * 4, 6, 512) == [[0, 1, 2, 3]]
    assert split_packed_rows([600, 700], 6, 512) == [[0, 1]]


def test_even_micro_batches_carry_every_step_once_in_fewer_slots():
    """micro_rows='even': the same steps (every response token once, the same ids) in at most micro_batch_size
    rows each, and no more token slots than 'fixed'; an unknown mode is refused by name."""
    cfg = _cfg()
    samples = _samples(cfg) * 3
    kw = dict(pad_id=PAD, micro_batch_size=4, packing=True, row_length=64)
    fixed = make_micro_batches(samples, cfg, micro_rows="fixed", **kw)
    even = make_micro_batches(samples, cfg, micro_rows="even", **kw)
    assert all(mb["input_ids"].shape[0] <= 4 for mb in even)
    assert sum(mb["input_ids"].size for mb in even) <= sum(mb["input_ids"].size for mb in fixed)

    def steps(micro):  # the (response tokens, prompt ids) of every trained segment (filler rows train none)
        out = []
        for mb in micro:
            for r in range(mb["input_ids"].shape[0]):
                for k in range(1, int(mb["segment_ids"][r].max()) + 1):
                    seg = mb["segment_ids"][r] == k
                    if (mb["loss_mask"][r][seg] > 0).any():
                        out.append((tuple(mb["input_ids"][r][seg & (mb["loss_mask"][r] > 0)]),
                                    tuple(mb["input_ids"][r][seg & (mb["loss_mask"][r] == 0)])))
        return sorted(out)
    assert steps(even) == steps(fixed)
    assert len(steps(even)) == len(samples)
    with pytest.raises(ValueError, match="micro_rows"):
        make_micro_batches(samples, cfg, micro_rows="half", **kw)

