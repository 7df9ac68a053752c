"""Look-back warm-up: a few hundred steps of dense synthetic copy and recall before SFT (`sft.copy_warmup_steps`).

A pretrained VLM arrives with copying circuits (induction heads) from language-model pretraining; the tiny
model starts from random weights and has to form them from SFT data that holds one element index or one
copied word per 150–500-token prompt. Here every position of the second half of a sequence is a look-back
target, so the circuits form in a few hundred steps (tests/models/test_learns_to_copy.py), and SFT starts
from a model that can already find a token seen earlier and read what stands next to it.

Three kinds of sequence, a third of the batch each, over the tokenizer's ordinary tokens:
  repeat    x1 … xh x1 … xh                     every repeated token after the first is a target
  recall →  k1 v1 … kn vn | kq vq …             v after each queried key (a label followed by its index)
  recall ←  v1 k1 … vn kn | kq vq …             v that stood before the queried key (index before label)
"""
from __future__ import annotations

import time
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from gui_jax.train.state import make_optimizer


def token_pool(model_cfg, first: int = 300) -> np.ndarray:
    """Ordinary token ids: above the byte pieces and below the first special token of the model."""
    special = [model_cfg.text.bos_token_id, model_cfg.text.eos_token_id, model_cfg.text.pad_token_id,
               model_cfg.image_token_id, model_cfg.video_token_id, model_cfg.vision_start_token_id,
               model_cfg.vision_end_token_id]
    last = min(int(s) for s in special if s is not None)
    if last - first < 64:
        raise ValueError(f"copy warm-up: only {last - first} ordinary token ids in [{first}, {last})")
    return np.arange(first, last)


def induction_batch(rng: np.random.Generator, pool: np.ndarray, batch: int, length: int):
    """(ids [B, L] int32, targets [B, L] float32): targets[b, t] = 1 where ids[b, t] can be predicted from
    ids[b, :t] by looking back (see the module docstring); rows cycle repeat, recall →, recall ←."""
    if length < 8 or length % 2:
        raise ValueError(f"copy warm-up length must be even and >= 8, got {length}")
    ids = np.zeros((batch, length), np.int32)
    tgt = np.zeros((batch, length), np.float32)
    half = length // 2
    for b in range(batch):
        kind = b % 3
        if kind == 0:
            x = rng.choice(pool, size=half, replace=False)
            ids[b] = np.concatenate([x, x])
            tgt[b, half + 1:] = 1.0
            continue
        n = half // 2                                        # pairs listed in the first half
        keys = rng.choice(pool, size=n, replace=False)
        vals = rng.choice(pool, size=n)
        first, second = (keys, vals) if kind == 1 else (vals, keys)
        ids[b, :half] = np.stack([first, second], axis=1).reshape(-1)
        q = rng.integers(0, n, size=half // 2)               # queries: key then its value
        ids[b, half:] = np.stack([keys[q], vals[q]], axis=1).reshape(-1)
        tgt[b, half + 1::2] = 1.0
    return ids, tgt


def copy_warmup(agent, steps: int, *, batch: int = 32, length: int = 96, learning_rate: float = 2e-3,
                seed: int = 0, progress: bool = True, pool: Optional[np.ndarray] = None) -> dict:
    """Trains agent.params in place for `steps` Adam steps on induction_batch over `pool` (default: every
    ordinary token); returns the look-back accuracy on a fresh batch before and after, and the wall time."""
    pool = token_pool(agent.model().cfg) if pool is None else np.asarray(pool)
    graphdef, rest = agent.graphdef, agent.rest
    opt = make_optimizer(learning_rate, weight_decay=1e-4)  # clip 1.0 + AdamW, optax's default decay

    def nll_acc(params, ids, tgt):  # mean NLL and accuracy over the look-back targets
        logits = nnx.merge(graphdef, params, rest)(ids).logits[:, :-1].astype(jnp.float32)
        y, m = ids[:, 1:], tgt[:, 1:]
        nll = -jnp.take_along_axis(jax.nn.log_softmax(logits), y[..., None], -1)[..., 0]
        acc = (jnp.argmax(logits, -1) == y).astype(jnp.float32)
        return (nll * m).sum() / m.sum(), (acc * m).sum() / m.sum()

    @jax.jit
    def step(params, opt_state, ids, tgt):
        (loss, acc), g = jax.value_and_grad(nll_acc, has_aux=True)(params, ids, tgt)
        updates, opt_state = opt.update(g, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, acc

    rng = np.random.default_rng(seed)
    probe = induction_batch(np.random.default_rng(seed + 10_000), pool, batch, length)
    params = agent.params
    before = float(nll_acc(params, *probe)[1])
    opt_state = opt.init(params)
    t0 = time.time()
    bar = None
    if progress:
        from gui_jax.core.progress import progress as progress_bar
        bar = progress_bar(total=steps, desc="copy warm-up")
    for _ in range(steps):
        params, opt_state, loss, acc = step(params, opt_state, *induction_batch(rng, pool, batch, length))
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{float(loss):.3f}", acc=f"{float(acc):.2f}")
    if bar is not None:
        bar.close()
    agent.set_params(params)
    after = float(nll_acc(params, *probe)[1])
    return {"steps": steps, "lookback_acc_before": before, "lookback_acc_after": after,
            "seconds": round(time.time() - t0, 1)}


def maybe_copy_warmup(agent, cfg, resuming: bool, logger: Optional[object] = None) -> Optional[dict]:
    """The warm-up of an `sft` block (copy_warmup_steps > 0) for a stage that starts from scratch; a
    resumed stage restores its params from the checkpoint, so it is skipped there."""
    steps = int(cfg.get("copy_warmup_steps", 0))
    if steps <= 0 or resuming:
        return None
    info = copy_warmup(agent, steps, batch=int(cfg.get("copy_warmup_batch", 32)),
                       length=int(cfg.get("copy_warmup_length", 96)), learning_rate=float(cfg.learning_rate),
                       seed=int(cfg.seed))
    print(f"copy warm-up: {steps} steps, look-back accuracy {info['lookback_acc_before']:.3f} -> "
          f"{info['lookback_acc_after']:.3f} ({info['seconds']} s)")
    if logger is not None:
        logger.write(0, {"lookback_acc_before": info["lookback_acc_before"],
                         "lookback_acc": info["lookback_acc_after"]}, prefix="copy_warmup/")
    return info
