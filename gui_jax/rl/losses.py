"""RL losses (docs/algorithms.md §5): PPO-clip policy loss with dual-clip, KL penalties, clipped value loss, entropy.

Every loss returns `(loss_sum, denominator)` instead of a mean. The trainer sums both over all
micro-batches of one optimiser step (gradient accumulation, data-parallel shards) and divides once:
    loss = Σ_mb loss_sum_mb / Σ_mb denominator_mb.
Because each denominator is a count (tokens, steps or sequences) that does not depend on the
parameters, the gradient of that quotient equals Σ_mb ∇loss_sum_mb / (global count), i.e. exactly the
full-batch gradient. So the trainer must divide by the GLOBAL count (all micro-batches, all hosts),
never by a per-micro-batch count. A step (or sequence) must not be split across micro-batches:
per-step token counts are computed inside one call.

Shapes (B rows, L tokens): logp, old_logp, ref_logp, advantages, values, returns [B, L] float32;
mask [B, L] {0,1} (1 on response tokens that are trained); step_ids [B, L] int32 in [0, L) — the id of
the trained step (multi-turn response) a token belongs to, unique within its row, −1 for none.
"""
from __future__ import annotations

from typing import Callable, Optional

import jax
import jax.numpy as jnp

from gui_jax.core.registry import lookup, register
from gui_jax.rl.names import AGGREGATIONS, KL_KINDS  # noqa: F401 - re-exported (import-light names)

LOG_RATIO_CLIP = 20.0  # docs/algorithms.md §5: ρ = exp(clip(logπθ − logπold, −20, 20))
LOW_VAR_KL_CLIP = 10.0  # k3 values are clipped to ±10 for stability (as verl does)


def _check_agg(agg: str) -> None:
    if agg not in AGGREGATIONS:
        raise ValueError(f"unknown loss aggregation {agg!r}; expected one of {AGGREGATIONS}")


def token_weights(mask: jax.Array, agg: str = "token_mean",
                  step_ids: Optional[jax.Array] = None) -> tuple[jax.Array, jax.Array]:
    """Per-token weights w [B, L] and denominator so that loss = Σ w·ℓ / denominator.

    token_mean: w = mask, denominator = number of masked tokens.
    step_token_mean: w = mask / (tokens of the token's step), denominator = number of steps
      (a step = one (row, step_id) segment with ≥1 masked token; without step_ids, one row = one step).
    seq_mean_token_mean: w = mask / (tokens of the row), denominator = rows with ≥1 masked token.
    """
    _check_agg(agg)
    mask = mask.astype(jnp.float32)
    if agg == "token_mean":
        return mask, jnp.sum(mask)
    if agg == "seq_mean_token_mean" or step_ids is None:
        row_tokens = jnp.sum(mask, axis=-1, keepdims=True)
        w = mask / jnp.maximum(row_tokens, 1.0)
        return w, jnp.sum((row_tokens[:, 0] > 0).astype(jnp.float32))
    # step_token_mean with packed steps: segment = row * L + step_id (step_id in [0, L)).
    b, l = mask.shape
    valid = mask * (step_ids >= 0)
    seg = jnp.arange(b, dtype=jnp.int32)[:, None] * l + jnp.clip(step_ids, 0, l - 1).astype(jnp.int32)
    counts = jax.ops.segment_sum(valid.reshape(-1), seg.reshape(-1), num_segments=b * l)
    tok_count = counts[seg]
    w = valid / jnp.maximum(tok_count, 1.0)
    return w, jnp.sum((counts > 0).astype(jnp.float32))


def aggregate(per_token: jax.Array, mask: jax.Array, agg: str = "token_mean",
              step_ids: Optional[jax.Array] = None) -> tuple[jax.Array, jax.Array]:
    """(Σ w·per_token, denominator) for a per-token quantity [B, L]; see `token_weights`."""
    w, denom = token_weights(mask, agg, step_ids)
    return jnp.sum(w * per_token), denom


def ratio_and_log_ratio(logp: jax.Array, old_logp: jax.Array) -> tuple[jax.Array, jax.Array]:
    """ρ = exp(clip(logp − old_logp, −20, 20)) [B, L] and the clipped log-ratio."""
    log_ratio = jnp.clip(logp - old_logp, -LOG_RATIO_CLIP, LOG_RATIO_CLIP)
    return jnp.exp(log_ratio), log_ratio


def policy_loss_per_token(logp, old_logp, advantages, *, clip_low: float = 0.2, clip_high: float = 0.2,
                          dual_clip: Optional[float] = None) -> dict[str, jax.Array]:
    """Per-token PPO-clip loss [B, L] and indicator arrays (unmasked).

    ℓ = max(−ρA, −clip(ρ, 1−ε_low, 1+ε_high)·A); with dual-clip c (> 1), for A < 0:
    ℓ = min(ℓ, −c·A) (bounds the loss when ρ ≫ 1 on a negative advantage).
    Returns {'loss', 'ratio', 'log_ratio', 'clipped' (PPO clip branch active), 'dual_clipped'}.
    """
    ratio, log_ratio = ratio_and_log_ratio(logp, old_logp)
    unclipped = -advantages * ratio
    clipped = -advantages * jnp.clip(ratio, 1.0 - clip_low, 1.0 + clip_high)
    loss = jnp.maximum(unclipped, clipped)
    clip_active = (clipped > unclipped).astype(jnp.float32)
    dual_active = jnp.zeros_like(loss)
    if dual_clip is not None:
        if dual_clip <= 1.0:
            raise ValueError(f"dual_clip must be > 1 (got {dual_clip})")
        bound = -advantages * dual_clip
        dual_active = ((advantages < 0) & (loss > bound)).astype(jnp.float32)
        loss = jnp.where(advantages < 0, jnp.minimum(loss, bound), loss)
    return {"loss": loss, "ratio": ratio, "log_ratio": log_ratio, "clipped": clip_active,
            "dual_clipped": dual_active}


def policy_loss(logp, old_logp, advantages, mask, *, clip_low: float = 0.2, clip_high: float = 0.2,
                dual_clip: Optional[float] = None, agg: str = "token_mean",
                step_ids: Optional[jax.Array] = None) -> tuple[jax.Array, jax.Array]:
    """PPO-clip policy loss (docs/algorithms.md §5) as (sum, denominator); see module doc for micro-batching."""
    terms = policy_loss_per_token(logp, old_logp, advantages, clip_low=clip_low, clip_high=clip_high,
                                  dual_clip=dual_clip)
    return aggregate(terms["loss"], mask, agg, step_ids)


def kl_penalty(logp: jax.Array, ref_logp: jax.Array, kind: str = "low_var_kl") -> jax.Array:
    """Per-token KL(πθ‖πref) estimate [B, L] from sampled-token log-probs.

    kl (k1): logp − ref; mse (k2): ½(logp − ref)²; low_var_kl (k3): e^{ref−logp} − (ref−logp) − 1,
    with ref−logp clipped to ±20 before exp and the result clipped to ±10.
    """
    if kind == "kl":
        return logp - ref_logp
    if kind == "mse":
        return 0.5 * jnp.square(logp - ref_logp)
    if kind == "low_var_kl":
        d = jnp.clip(ref_logp - logp, -LOG_RATIO_CLIP, LOG_RATIO_CLIP)
        return jnp.clip(jnp.exp(d) - d - 1.0, -LOW_VAR_KL_CLIP, LOW_VAR_KL_CLIP)
    raise ValueError(f"unknown KL estimator {kind!r}; expected one of {KL_KINDS}")


def kl_loss(logp, ref_logp, mask, *, kind: str = "low_var_kl", agg: str = "token_mean",
            step_ids: Optional[jax.Array] = None) -> tuple[jax.Array, jax.Array]:
    """KL penalty aggregated like the policy loss: (sum, denominator)."""
    return aggregate(kl_penalty(logp, ref_logp, kind), mask, agg, step_ids)


def value_loss(values, old_values, returns, mask, *, clip: Optional[float] = 0.2, agg: str = "token_mean",
               step_ids: Optional[jax.Array] = None) -> tuple[jax.Array, jax.Array]:
    """PPO clipped value loss ½·max((V−R)², (V_old + clip(V−V_old, ±c) − R)²) as (sum, denominator).

    clip=None gives the plain ½(V−R)². Shapes [B, L] (or [B, T] over steps with a step mask).
    """
    err = jnp.square(values - returns)
    if clip is not None:
        v_clipped = old_values + jnp.clip(values - old_values, -clip, clip)
        err = jnp.maximum(err, jnp.square(v_clipped - returns))
    return aggregate(0.5 * err, mask, agg, step_ids)


def entropy_from_logits(logits: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Token-mean entropy of softmax(logits [B, L, V]) as (sum, masked token count); a metric."""
    logits = logits.astype(jnp.float32)
    logz = jax.nn.logsumexp(logits, axis=-1)
    probs = jax.nn.softmax(logits, axis=-1)
    ent = logz - jnp.sum(probs * logits, axis=-1)
    mask = mask.astype(jnp.float32)
    return jnp.sum(ent * mask), jnp.sum(mask)


def combine_loss(logp, old_logp, advantages, mask, *, ref_logp: Optional[jax.Array] = None,
                 kl_coef: float = 0.0, kl_kind: str = "low_var_kl", clip_low: float = 0.2,
                 clip_high: float = 0.2, dual_clip: Optional[float] = None, agg: str = "token_mean",
                 step_ids: Optional[jax.Array] = None
                 ) -> tuple[jax.Array, jax.Array, dict[str, tuple[jax.Array, jax.Array]]]:
    """Policy loss + β·KL (same aggregation, so one denominator) and micro-batch-summable metrics.

    Returns (loss_sum, denominator, metrics). Each metric is a (sum, count) pair over masked tokens
    (or, for pg_loss / kl, over the loss denominator); reduce a list of them with `finalize_metrics`.
    Metrics: pg_loss, kl (if ref_logp given), clip_frac, dual_clip_frac, approx_kl (k3 of old‖new),
    ratio_mean and ratio_sq (for the ratio std).
    """
    terms = policy_loss_per_token(logp, old_logp, advantages, clip_low=clip_low, clip_high=clip_high,
                                  dual_clip=dual_clip)
    w, denom = token_weights(mask, agg, step_ids)
    pg_sum = jnp.sum(w * terms["loss"])
    total = pg_sum
    m = mask.astype(jnp.float32)
    ntok = jnp.sum(m)
    metrics = {"pg_loss": (pg_sum, denom)}
    if ref_logp is not None:
        kl_sum = jnp.sum(w * kl_penalty(logp, ref_logp, kl_kind))
        total = total + kl_coef * kl_sum
        metrics["kl"] = (kl_sum, denom)
    # k3 estimate of KL(πold‖πθ) on tokens sampled from πold: with r = πθ/πold = e^lr (lr = the
    # clipped log πθ − log πold), k3 = r − 1 − log r = e^lr − 1 − lr (≥ 0, unbiased under πold).
    lr = terms["log_ratio"]
    approx_kl = jnp.exp(lr) - 1.0 - lr
    for name, val in (("clip_frac", terms["clipped"]), ("dual_clip_frac", terms["dual_clipped"]),
                      ("approx_kl", approx_kl), ("ratio_mean", terms["ratio"]),
                      ("ratio_sq", jnp.square(terms["ratio"]))):
        metrics[name] = (jnp.sum(val * m), ntok)
    return total, denom, metrics


def finalize_metrics(metric_dicts) -> dict[str, float]:
    """Sum (sum, count) pairs over micro-batches and divide; adds ratio_std from ratio_sq."""
    metric_dicts = list(metric_dicts)
    if not metric_dicts:
        return {}
    out = {}
    for name in metric_dicts[0]:
        s = sum(float(d[name][0]) for d in metric_dicts)
        c = sum(float(d[name][1]) for d in metric_dicts)
        out[name] = s / c if c > 0 else float("nan")
    if "ratio_mean" in out and "ratio_sq" in out:
        out["ratio_std"] = max(out["ratio_sq"] - out["ratio_mean"] ** 2, 0.0) ** 0.5
    return out


# --------------------------------------------------------------------------- registry
# Actor losses by name (an `OnlineAlgorithm.policy_loss` names one). Each has combine_loss's signature:
#     fn(logp, old_logp, advantages, mask, *, ref_logp, kl_coef, kl_kind, clip_low, clip_high, dual_clip,
#        agg, step_ids) -> (loss_sum, denominator, metrics of (sum, count) pairs)
# on one micro-batch ([B, L] arrays, see the module doc); it runs inside the jitted update.
POLICY_LOSSES: dict[str, Callable] = {"ppo_clip": combine_loss}


def get_policy_loss(name: str) -> Callable:
    """The policy loss registered as `name` (see POLICY_LOSSES)."""
    return lookup(POLICY_LOSSES, name, "policy loss")


def register_policy_loss(name: str, fn: Callable) -> Callable:
    """Register `fn` (combine_loss's signature) under `name` (overwriting is an error)."""
    return register(POLICY_LOSSES, name, fn, "policy loss")
