"""Heads on the Qwen2.5-VL backbone: a scalar value head (PPO critic) and label-token scoring (reward models).

Value model: values[b, l] = w . h[b, l] + bias, h = final-normed last hidden state. `ValueModel(backbone)` owns
the backbone, so the critic trains end to end; `init_value_head_from_labels` starts the head at the reward
model's log-odds logit(+) - logit(-) (GUI-Shepherd initialises the critic from the PRM).

Reward scoring (docs/algorithms.md §9): the model reads (goal, history, screen, candidate action) and its
next token is one of two label tokens. At the label position (the last prompt token, whose logits predict the label):
  p_pos = softmax([logit_pos, logit_neg])[0] = sigmoid(logit_pos - logit_neg); pos_logit = logit_pos.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from gui_jax.models.qwen2_5_vl.layers import make_param


class ValueModel(nnx.Module):
  """Backbone + linear value head. __call__ takes the backbone's arguments and returns values [B, L] float32."""

  def __init__(self, backbone: nnx.Module, *, rngs: nnx.Rngs | None = None, init_scale: float = 0.0):
    hidden = backbone.cfg.text.hidden_size
    self.backbone = backbone
    self.cfg = backbone.cfg
    init = "normal" if init_scale > 0 else "zeros"
    if init == "normal" and rngs is None:
      raise ValueError("ValueModel: init_scale > 0 needs rngs")
    self.value_kernel = make_param(rngs, (hidden,), ("embed",), jnp.float32, init=init, scale=init_scale)
    self.value_bias = make_param(None, (), (), jnp.float32, init="zeros")

  def values_from_hidden(self, hidden: jax.Array) -> jax.Array:
    """hidden [..., H] -> values [...] float32."""
    return jnp.dot(hidden.astype(jnp.float32), self.value_kernel[...]) + self.value_bias[...]

  def __call__(self, input_ids, attention_mask=None, pixel_values=None, image_grid_thw=None, position_ids=None,
               **kw) -> jax.Array:
    """Same inputs as the backbone; values [B, L] float32 at every position (mask them with your loss mask)."""
    out = self.backbone(input_ids, attention_mask=attention_mask, pixel_values=pixel_values,
                        image_grid_thw=image_grid_thw, position_ids=position_ids, compute_logits=False, **kw)
    return self.values_from_hidden(out.last_hidden_state)


def _lm_head_columns(model: nnx.Module, token_ids) -> jax.Array:
  """[H, K] output-projection columns of `token_ids` (tied embedding rows or lm_head columns)."""
  ids = jnp.asarray(token_ids, jnp.int32)
  if getattr(model, "lm_head", None) is None:
    return model.language_model.embed_tokens[...][ids].T
  return model.lm_head[...][:, ids]


def init_value_head_from_labels(value_model: ValueModel, pos_id: int, neg_id: int) -> ValueModel:
  """Sets the value head so that values = logit(pos_id) - logit(neg_id) of the backbone (log-odds of P(+))."""
  cols = _lm_head_columns(value_model.backbone, [pos_id, neg_id]).astype(jnp.float32)
  value_model.value_kernel[...] = cols[:, 0] - cols[:, 1]
  value_model.value_bias[...] = jnp.zeros((), jnp.float32)
  return value_model


# ------------------------------------------------------------------------------------------- label scoring
def label_scores(logits: jax.Array, pos_id: int, neg_id: int) -> dict[str, jax.Array]:
  """logits [..., V] at label positions -> dict of [...] float32: p_pos, pos_logit, neg_logit, log_odds."""
  lp = logits[..., pos_id].astype(jnp.float32)
  ln = logits[..., neg_id].astype(jnp.float32)
  return {"p_pos": jax.nn.sigmoid(lp - ln), "pos_logit": lp, "neg_logit": ln, "log_odds": lp - ln}


def last_valid_index(attention_mask: jax.Array) -> jax.Array:
  """attention_mask [B, L] -> [B] int32 index of each row's last valid token (left or right padding)."""
  m = jnp.asarray(attention_mask).astype(bool)
  return (m.shape[1] - 1 - jnp.argmax(m[:, ::-1], axis=1)).astype(jnp.int32)


def gather_positions(x: jax.Array, positions: jax.Array) -> jax.Array:
  """x [B, L, ...], positions [B] -> [B, ...]."""
  idx = positions.reshape((-1,) + (1,) * (x.ndim - 1))
  return jnp.take_along_axis(x, idx, axis=1)[:, 0]


def score_labels(model: nnx.Module, input_ids, pos_id: int, neg_id: int, attention_mask=None,
                 label_positions=None, **model_kw) -> dict[str, jax.Array]:
  """Reward-model scores for prompts ending right before the label token.

  input_ids [B, L]; label_positions [B] (default: last valid token) = the positions whose logits predict the
  label. Only the two label columns of the LM head are computed. Returns label_scores(...) dict of [B].
  """
  ids = jnp.asarray(input_ids)
  mask = jnp.ones(ids.shape, bool) if attention_mask is None else jnp.asarray(attention_mask).astype(bool)
  out = model(ids, attention_mask=mask, compute_logits=False, **model_kw)
  pos = last_valid_index(mask) if label_positions is None else jnp.asarray(label_positions, jnp.int32)
  h = gather_positions(out.last_hidden_state, pos)                      # [B, H]
  cols = _lm_head_columns(model, [pos_id, neg_id])                      # [H, 2]
  dtype = jnp.dtype(model.cfg.dtype)
  two = jnp.dot(h.astype(dtype), cols.astype(dtype)).astype(jnp.float32)  # [B, 2]
  return {"p_pos": jax.nn.sigmoid(two[:, 0] - two[:, 1]), "pos_logit": two[:, 0], "neg_logit": two[:, 1],
          "log_odds": two[:, 0] - two[:, 1]}


def label_token_nll(logits: jax.Array, labels: jax.Array, pos_id: int, neg_id: int,
                    over: str = "vocab") -> jax.Array:
  """Reward-model loss per example: logits [B, V] at the label position, labels [B] bool (True = positive).

  over='vocab': cross-entropy of the label token over the whole vocabulary (plain LM loss, UI-Genie Eq. 1);
  over='pair': binary cross-entropy of softmax over the two label logits only. Returns [B] float32.
  """
  target = jnp.where(labels, pos_id, neg_id).astype(jnp.int32)
  x = logits.astype(jnp.float32)
  if over == "vocab":
    return -jnp.take_along_axis(jax.nn.log_softmax(x, -1), target[:, None], -1)[:, 0]
  if over == "pair":
    d = x[:, pos_id] - x[:, neg_id]
    return jnp.where(labels, -jax.nn.log_sigmoid(d), -jax.nn.log_sigmoid(-d))
  raise ValueError(f"label_token_nll: over must be 'vocab' or 'pair', got {over!r}")
