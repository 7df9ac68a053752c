"""Pure, jittable token-sampling math: logit filtering (temperature, top-k, top-p) and token choice.

Sampling settings are traced scalars (not static), so changing temperature / top-k / top-p never recompiles.
Conventions: logits [B, V] float; a filtered-out token gets -inf; temperature 0 means greedy (argmax).
The log-probabilities returned with a token are those of the RAW model distribution (log_softmax of the
unmodified logits at temperature 1), independent of the filtering used to pick the token: that is the
quantity the training forward recomputes and RL losses use as log pi_old.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

NEG_INF = -jnp.inf


def apply_temperature(logits: jax.Array, temperature: jax.Array | float) -> jax.Array:
  """logits [B, V] / temperature; temperature <= 0 leaves the logits unchanged (greedy path ignores them)."""
  t = jnp.asarray(temperature, jnp.float32)
  return logits.astype(jnp.float32) / jnp.where(t > 0, t, 1.0)


def top_k_filter(logits: jax.Array, k: jax.Array | int) -> jax.Array:
  """Keeps the k largest logits per row [B, V] (ties at the k-th value all kept); k <= 0 or k >= V keeps all."""
  v = logits.shape[-1]
  k = jnp.asarray(k, jnp.int32)
  sorted_desc = -jnp.sort(-logits, axis=-1)
  idx = jnp.broadcast_to(jnp.clip(k - 1, 0, v - 1), logits.shape[:-1] + (1,))
  kth = jnp.take_along_axis(sorted_desc, idx, axis=-1)
  keep = (logits >= kth) | (k <= 0) | (k >= v)
  return jnp.where(keep, logits, NEG_INF)


def top_p_filter(logits: jax.Array, p: jax.Array | float) -> jax.Array:
  """Nucleus filter on rows [B, V]: keeps the smallest top set whose probability reaches p (top-1 always kept).

  A token is kept iff the probability mass strictly above it (in descending order) is < p; p >= 1 keeps all.
  """
  p = jnp.asarray(p, jnp.float32)
  x = logits.astype(jnp.float32)
  order = jnp.argsort(-x, axis=-1)
  sorted_logits = jnp.take_along_axis(x, order, axis=-1)
  probs = jax.nn.softmax(sorted_logits, axis=-1)
  mass_before = jnp.cumsum(probs, axis=-1) - probs
  keep_sorted = (mass_before < p) | (p >= 1.0)
  keep_sorted = keep_sorted.at[:, 0].set(True)
  # Scatter the keep mask back to vocabulary order.
  keep = jnp.zeros_like(keep_sorted).at[jnp.arange(x.shape[0])[:, None], order].set(keep_sorted)
  return jnp.where(keep, logits, NEG_INF)


def filter_logits(logits: jax.Array, temperature, top_k, top_p) -> jax.Array:
  """Temperature, then top-k, then top-p (transformers' order). Sorting runs only when a filter is on."""
  x = apply_temperature(logits, temperature)
  top_k = jnp.asarray(top_k, jnp.int32)
  top_p = jnp.asarray(top_p, jnp.float32)
  x = jax.lax.cond((top_k > 0) & (top_k < x.shape[-1]), lambda y: top_k_filter(y, top_k), lambda y: y, x)
  x = jax.lax.cond(top_p < 1.0, lambda y: top_p_filter(y, top_p), lambda y: y, x)
  return x


def first_argmax(x: jax.Array) -> jax.Array:
  """jnp.argmax(x, axis=-1) (the first maximal index) as two plain reductions: [B, V] -> [B] int32. XLA:CPU runs
  argmax's variadic (value, index) reduce several times slower, and a decode step takes one or two per token."""
  m = jnp.max(x, axis=-1, keepdims=True)
  return jnp.min(jnp.where(x == m, jnp.arange(x.shape[-1], dtype=jnp.int32), x.shape[-1]), axis=-1)


def categorical(rng: jax.Array, logits: jax.Array) -> jax.Array:
  """jax.random.categorical(rng, logits, axis=-1), token for token (the same Gumbel draw, then first_argmax):
  [B, V] -> [B] int32; ~7x faster on CPU than the library call for a [32, 4096] step."""
  return first_argmax(logits + jax.random.gumbel(rng, logits.shape, logits.dtype))


def sample_tokens(rng: jax.Array, logits: jax.Array, temperature, top_k, top_p,
                  banned_ids: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
  """Picks one token per row of logits [B, V]. Returns (tokens [B] int32, raw logprobs [B] float32).

  temperature == 0 -> argmax of the raw logits; else a categorical draw from the filtered distribution.
  banned_ids [K] int32: never chosen (their logits set to -inf before choosing).
  The logprob is log_softmax(raw logits)[token] (see module docstring), bans and filters ignored.
  """
  raw_logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
  if banned_ids is not None and banned_ids.shape[0]:
    logits = logits.at[:, banned_ids].set(NEG_INF)
  temperature = jnp.asarray(temperature, jnp.float32)

  def draw(_):
    return categorical(rng, filter_logits(logits, temperature, top_k, top_p))

  tokens = jax.lax.cond(temperature > 0, draw, lambda _: first_argmax(logits), None)
  logp = jnp.take_along_axis(raw_logp, tokens[:, None], axis=-1)[:, 0]
  return tokens, logp


def token_logprobs(logits: jax.Array, tokens: jax.Array) -> jax.Array:
  """log_softmax(logits)[..., token]: logits [..., V], tokens [...] -> [...] float32 (the training-side twin)."""
  logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
  return jnp.take_along_axis(logp, tokens[..., None].astype(jnp.int32), axis=-1)[..., 0]
