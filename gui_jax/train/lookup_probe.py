"""The synthetic look-up probe: can a text decoder learn to find a named line on a screen, from random weights?

Token ids only (no tokenizer, no images), so a run takes minutes and isolates the skill every GUI agent needs:
a goal names a label, the screen lists labelled lines with element indices, the answer is the named line's
index. A row of a batch is one screen followed by `queries` goals, each answered:

    screen   line i = [ k_i ] ; f… w1 w2 \\n        (index_first; f = 0..filler flag tokens)
                    = ; w1 w2 [ k_i ] \\n           (index_last)
                    = ; w1 w2 k_i \\n               (adjacent: the index is the token after the label)
    queries  Goal w1 w2 Answer k_j \\n   (adjacent: Goal w1 w2 k_j \\n)

With `word_pieces` = p > 1 a word is p piece tokens from `train_words` (as a tokenizer splits an unknown word)
and the held-out words are piece combinations that training never shows as a word: every held-out token
was trained, only the words are new. That is the held-out set a real tokenizer gives a label it never saw.

Only k_j after a goal is supervised (plus, with `screen_lm_weight` > 0, the next-token loss on the screen
text). Labels are `key_words` words from a word pool; with `shared_words` the keys of one screen are drawn
from a pool of only `lines` words, so the target's words also occur in distractor lines ("Quiet Fire"
among "Quiet Letters" and "Midnight Fire"). Training screens use words from `train_words`; the held-out
accuracy is measured on screens made only of `held_out_words`, ids the training never saw, on the first
goal of each screen (later goals could be answered partly by elimination).

    python -m gui_jax.main --config configs/lookup_probe.py [--config.probe.model=reference ...]

`model='tiny'` trains the Qwen2.5-VL tiny preset (gui_jax.models); `model='reference'` a minimal pre-norm
decoder written here from scratch (multi-head attention with plain RoPE, SwiGLU MLP, tied embeddings) on the
same batches: when both stay at chance the data or the optimisation is the obstacle, not our model code.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import pickle
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gui_jax.models.qwen2_5_vl.layers import rescale_init
from gui_jax.train.attention_pointers import head_log_attention

# Structural tokens (ids below the ordinary words; meaning is given by use only).
LB, RB, SEMI, NL, GOAL, ANSWER = 3, 4, 5, 6, 7, 8
STOP, EARLIER = 9, 64   # done_share: the answer "the goal is already done", and the history marker
INDEX_BASE = 10      # element index k is token INDEX_BASE + k
FLAG_TOKENS = (60, 64)
ORDERS = ("index_first", "index_last", "adjacent")
MODELS = ("tiny", "reference")


@dataclasses.dataclass(frozen=True)
class LookupProbeConfig:
  lines: int = 24                      # lines per screen (≤ 50: index tokens 10..59)
  min_lines: int = 0                   # > 0: each training screen has a uniform number of lines in [min_lines,
                                       # the stage's lines], so no solution specific to one screen size pays;
                                       # held-out screens keep the stage's exact size
  queries: int = 8                     # goals answered per screen (dense supervision)
  key_words: int = 2                   # words per label (1 or 2)
  shared_words: bool = True            # 2-word keys drawn from `lines` words: distractors share words
  order: str = "index_last"            # index_first | index_last | adjacent
  shuffle_ids: bool = False           # number each screen's lines with a random choice of the 50 index tokens, so
                                       # the answer must be copied from the screen (in-order ids let the line's
                                       # position stand for its index, a solution tied to the screen size)
  filler: int = 0                      # up to this many flag tokens before an index_first label
  train_words: tuple[int, int] = (100, 2100)
  held_out_words: tuple[int, int] = (2100, 2600)
  screen_lm_weight: float = 0.0        # w · next-token loss on the screen's tokens
  model: str = "tiny"                  # tiny | reference
  tie_embeddings: bool = True          # tiny: tie_word_embeddings (the preset ties them)
  layers: int = 4
  hidden: int = 128
  heads: int = 4
  kv_heads: int = 2
  rope_theta: float = 10000.0          # RoPE base (the tiny preset's; Qwen2.5's real sizes use 1e6): the rotary
                                       # pairs slow enough to keep a content match steady across a long screen
  batch: int = 32
  steps: int = 600
  learning_rate: float = 2e-3
  warmup: int = 20
  final_lr_fraction: float = 1.0       # < 1: after warm-up the rate decays (cosine) to this fraction of
                                       # learning_rate at the last step; 1: it stays constant
  eval_every: int = 100
  eval_screens: int = 256
  seed: int = 0
  word_pieces: int = 1                 # piece tokens per word; > 1: held-out words = unseen piece combinations
  curriculum: str = ""                 # "4x1:1500,12:300": 4-line screens of 1-word labels for 1500 steps, then
                                       # 12 lines (of key_words words) for 300, then `lines` for the rest of
                                       # `steps` (shared-word keys need ≥ 4 lines)
  checkpoint_seconds: float = 300.0    # with a state_path: a resumable snapshot (params, Adam state, data stream,
                                       # curve) this often and at the end (0: after every step)
  answer_token: bool = True            # goals end "Goal w… Answer k"; False: "Goal w… k" (the answer follows the
                                       # label's last token, as in `adjacent`)
  init_gain: float = 0.0               # > 0: every weight matrix but the embedding starts at std gain/√fan_in
                                       # instead of 0.02 (at width 128, 0.02 is a gain of 0.23 per matrix, so a
                                       # two-hop circuit starts ~1e-3 strong and sits on a long plateau)
  residual_gain: float = 1.0           # with init_gain: o_proj and down_proj start this much smaller still
  match_layer: int = -1                # with pointer_weight: the layer whose head 0 points at the matched label
  pointer_weight: float = 0.0          # > 0 (index_first only): + w · cross-entropy of two attention patterns:
                                       # layer 0 head 0 from each label token to its line's index token, and the
                                       # last layer's head 0 from each answer-predicting token to the matched
                                       # line's last label token (tiny model; the answer loss is unchanged)
  pointer_label_start: bool = False    # with pointer_weight: also layer 0 head 1 from every label token (screen and
                                       # goal) to its label's first token, so a multi-word label is matched whole
  pointer_label_bag: bool = False      # with pointer_label_start: that head points each label token at all of its
                                       # label's tokens up to itself (not the first only), so the last token holds
                                       # every piece and two labels sharing a first and a last piece differ
  index_readout_weight: float = 0.0    # > 0 (tiny, with pointer_weight): + w · cross-entropy of layer 0's output
                                       # at each label token, unembedded over the 50 index tokens, against its
                                       # line's index: the copy circuit's first half is learnt directly instead
                                       # of only through the second (which left a long plateau)
  done_share: float = 0.0              # > 0: each screen is preceded by its first goal and that goal's earlier step,
                                       # "Goal w… Earlier [k]" (the agent's history before the UI); with this
                                       # probability the step already clicked the goal's line k and the first
                                       # goal's answer is STOP: the answer-or-stop step (ignoring the history
                                       # caps the first goal's accuracy at max(share, 1 - share))
  advance_at: float = 0.0              # > 0: a curriculum stage ends as soon as the mean train accuracy of its
                                       # last 100 steps reaches this (its steps become a maximum), so the
                                       # screens grow only after the look-up has formed on the smaller ones

  def __post_init__(self):
    if self.order not in ORDERS:
      raise ValueError(f"order {self.order!r} unknown; choose one of {ORDERS}")
    if self.model not in MODELS:
      raise ValueError(f"model {self.model!r} unknown; choose one of {MODELS}")
    if not 1 <= self.lines <= 50 or not 1 <= self.queries <= self.lines:
      raise ValueError(f"need 1 ≤ queries ({self.queries}) ≤ lines ({self.lines}) ≤ 50")
    if self.min_lines and not self.queries <= self.min_lines <= self.lines:
      raise ValueError(f"min_lines ({self.min_lines}) must be 0 or within [queries ({self.queries}), lines "
                       f"({self.lines})]")
    if self.pointer_weight and (self.order != "index_first" or self.model != "tiny"):
      raise ValueError(f"pointer_weight needs order='index_first' and model='tiny' (the pointer targets are the "
                       f"line's index before its label), got order={self.order!r}, model={self.model!r}")
    if self.pointer_label_bag and not self.pointer_label_start:
      raise ValueError("pointer_label_bag needs pointer_label_start=True (it changes that head's targets)")
    if self.pointer_label_start and (not self.pointer_weight or self.heads < 2):
      raise ValueError(f"pointer_label_start needs pointer_weight > 0 and heads ≥ 2, got {self.pointer_weight}, "
                       f"{self.heads}")
    if not -self.layers <= self.match_layer < self.layers:
      raise ValueError(f"match_layer must name one of the {self.layers} layers (negative: from the end), "
                       f"got {self.match_layer}")
    if self.pointer_weight < 0 or self.init_gain < 0 or self.residual_gain < 0:
      raise ValueError(f"pointer_weight ({self.pointer_weight}), init_gain ({self.init_gain}) and residual_gain "
                       f"({self.residual_gain}) must be ≥ 0")
    if self.index_readout_weight < 0 or (self.index_readout_weight and not (self.pointer_weight
                                                                          and self.model == "tiny")):
      raise ValueError(f"index_readout_weight ({self.index_readout_weight}) must be ≥ 0 and needs pointer_weight "
                       f"> 0 and model='tiny' (its targets are the pointers' index tokens)")
    if not self.rope_theta > 1.0:
      raise ValueError(f"rope_theta must be > 1 (the RoPE base), got {self.rope_theta}")
    if not 0.0 <= self.done_share <= 1.0:
      raise ValueError(f"done_share must be in [0, 1], got {self.done_share}")
    if not 0.0 <= self.advance_at <= 1.0:
      raise ValueError(f"advance_at must be in [0, 1], got {self.advance_at}")
    if not 0.0 <= self.final_lr_fraction <= 1.0:
      raise ValueError(f"final_lr_fraction must be in [0, 1], got {self.final_lr_fraction}")
    if self.final_lr_fraction < 1.0 and self.steps <= self.warmup:
      raise ValueError(f"final_lr_fraction {self.final_lr_fraction} anneals after the warm-up: need steps "
                       f"({self.steps}) > warmup ({self.warmup})")
    if self.stages()[-1][2] < 0 and not self.advance_at:   # gated stages may be cut short: steps are maxima
      raise ValueError(f"curriculum {self.curriculum!r} has more steps than steps={self.steps}")
    for lines, key_words, _ in self.stages():
      if not self.queries <= lines <= 50:
        raise ValueError(f"curriculum stage of {lines} lines: need queries ({self.queries}) ≤ lines ≤ 50")
      if key_words not in (1, 2):
        raise ValueError(f"key_words must be 1 or 2, got {key_words}")
    lo, hi = self.train_words
    hlo, hhi = self.held_out_words
    if not 1 <= self.word_pieces <= 3:
      raise ValueError(f"word_pieces must be 1, 2 or 3, got {self.word_pieces}")
    if self.word_pieces > 1:
      if self.held_out_words != self.train_words or lo < 100 or hi - lo < 8:
        raise ValueError(f"word_pieces={self.word_pieces}: held-out words are new combinations of the same "
                         f"pieces, so held_out_words must equal train_words (≥ 8 ids from 100), got "
                         f"{self.held_out_words} and {self.train_words}")
    elif max(lo, hlo) < min(hi, hhi) or min(lo, hlo) < 100:
      raise ValueError(f"train_words {self.train_words} and held_out_words {self.held_out_words} must be "
                       "disjoint ranges of ids ≥ 100")


  def stages(self) -> list[tuple[int, int, int]]:
    """[(lines, key_words, steps)] of the curriculum, ending with (lines, key_words) for the steps left."""
    head = []
    for part in (p.strip() for p in self.curriculum.split(",")):
      if not part:
        continue
      try:
        shape, n = part.split(":")
        lines, _, words = shape.partition("x")
        head.append((int(lines), int(words) if words else self.key_words, int(n)))
      except ValueError:
        raise ValueError(f"curriculum {self.curriculum!r}: write 'lines:steps' or 'linesxkey_words:steps', "
                         "comma-separated") from None
    return head + [(self.lines, self.key_words, self.steps - sum(n for *_, n in head))]


def word_ids(cfg: LookupProbeConfig, held_out: bool) -> np.ndarray:
  """The word ids of one side. word_pieces = 1: the token ids of train_words / held_out_words. Otherwise
  numbers w < P^p (P = pieces in train_words) spelled by `word_tokens`; 1 in 5 combinations, chosen by a
  fixed hash, is held out."""
  if cfg.word_pieces == 1:
    return np.arange(*(cfg.held_out_words if held_out else cfg.train_words))
  n = (cfg.train_words[1] - cfg.train_words[0]) ** cfg.word_pieces
  return _piece_words(n, held_out)


@functools.lru_cache(maxsize=8)
def _piece_words(n: int, held_out: bool) -> np.ndarray:
  w = np.arange(n, dtype=np.int64)
  mask = (w * 2654435761 % 1000003) % 5 == 0
  return w[mask] if held_out else w[~mask]


def word_tokens(cfg: LookupProbeConfig, word: int) -> list[int]:
  """The tokens of one word: itself, or its `word_pieces` base-P digits as piece ids."""
  if cfg.word_pieces == 1:
    return [int(word)]
  lo, hi = cfg.train_words
  out = []
  for _ in range(cfg.word_pieces):
    word, digit = divmod(int(word), hi - lo)
    out.append(lo + digit)
  return out


def screen_keys(rng: np.random.Generator, cfg: LookupProbeConfig, held_out: bool) -> list[tuple[int, ...]]:
  """`cfg.lines` distinct labels of `cfg.key_words` words (word ids of the held-out or the train side)."""
  ids = word_ids(cfg, held_out)
  if cfg.key_words == 1:
    return [(int(w),) for w in rng.choice(ids, cfg.lines, replace=False)]
  pool = rng.choice(ids, max(cfg.lines, 4) if cfg.shared_words else 2 * cfg.lines, replace=False)
  if not cfg.shared_words:
    return [(int(pool[2 * i]), int(pool[2 * i + 1])) for i in range(cfg.lines)]
  keys: dict[tuple[int, int], None] = {}
  while len(keys) < cfg.lines:
    a, b = rng.choice(pool, 2, replace=False)
    keys.setdefault((int(a), int(b)), None)
  out = list(keys)
  # every label shares a word with another line: a key that shares none takes a word of another key
  alone = lambda i: not any(set(out[i]) & set(o) for j, o in enumerate(out) if j != i)
  for _ in range(100 * len(out)):
    i = next((i for i in range(len(out)) if alone(i)), None)
    if i is None or len(out) < 2:
      break
    donor = out[(i + 1 + int(rng.integers(len(out) - 1))) % len(out)]
    shared, fresh = donor[int(rng.integers(2))], int(rng.choice([w for w in pool if w not in donor]))
    key = (shared, fresh) if rng.random() < 0.5 else (fresh, shared)
    if key not in out:
      out[i] = key
  return out


def screen_row(rng: np.random.Generator, cfg: LookupProbeConfig, held_out: bool, queries: int):
  """One screen and its goals: (tokens, answer mask, screen mask), three equal-length int lists."""
  if cfg.min_lines and not held_out:
    cfg = dataclasses.replace(cfg, lines=int(rng.integers(cfg.min_lines, cfg.lines + 1)), min_lines=0)
  keys = [[t for w in key for t in word_tokens(cfg, w)] for key in screen_keys(rng, cfg, held_out)]
  index = [int(k) for k in rng.permutation(50)[:cfg.lines]] if cfg.shuffle_ids else list(range(cfg.lines))
  tokens: list[int] = []
  for k, key in zip(index, keys):
    if cfg.order == "index_first":
      flags = [int(f) for f in rng.integers(*FLAG_TOKENS, int(rng.integers(0, cfg.filler + 1)))]
      tokens += [LB, INDEX_BASE + k, RB, SEMI, *flags, *key, NL]
    elif cfg.order == "index_last":
      tokens += [SEMI, *key, LB, INDEX_BASE + k, RB, NL]
    else:
      tokens += [SEMI, *key, INDEX_BASE + k, NL]
  screen_len = len(tokens)
  answer = [0] * screen_len
  goals = rng.choice(cfg.lines, queries, replace=False)
  done = cfg.done_share > 0 and rng.random() < cfg.done_share   # no draw at 0: streams unchanged
  for q, j in enumerate(goals):
    mid = [] if cfg.order == "adjacent" or not cfg.answer_token else [ANSWER]
    tokens += [GOAL, *keys[j], *mid, STOP if done and q == 0 else INDEX_BASE + index[j], NL]
    answer += [0] * (1 + len(keys[j]) + len(mid)) + [1, 0]
  screen = [1] * screen_len + [0] * (len(tokens) - screen_len)
  if cfg.done_share > 0:   # the first goal and its history before the screen
    j = goals[0]
    prefix = [GOAL, *keys[j], EARLIER, *([INDEX_BASE + index[j]] if done else []), NL]
    tokens, answer, screen = prefix + tokens, [0] * len(prefix) + answer, [0] * len(prefix) + screen
  return tokens, answer, screen


def lookup_batch(rng: np.random.Generator, cfg: LookupProbeConfig, held_out: bool, batch: int,
                 queries: int):
  """(ids [B, L] int32, answer [B, L] f32 = 1 at supervised answer tokens, screen [B, L] f32 = 1 on screen
  tokens); L is rounded up to a multiple of 32 (padding id 0) so jit sees few shapes."""
  rows = [screen_row(rng, cfg, held_out, queries) for _ in range(batch)]
  length = -(-max(len(r[0]) for r in rows) // 32) * 32
  out = [np.zeros((batch, length), dt) for dt in (np.int32, np.float32, np.float32)]
  for b, row in enumerate(rows):
    for arr, vals in zip(out, row):
      arr[b, :len(vals)] = vals
  return tuple(out)


def pointer_targets(ids: np.ndarray, answer: np.ndarray, screen: np.ndarray):
  """The attention targets of `pointer_weight` for index_first batches (arrays of `lookup_batch`):
  (index_pos [B, L] int32 = the position of the line's index token at each screen label token, label [B, L] f32 =
  1 there; match_pos [B, L] int32 = at each answer token t, the position of the last label token of the line
  whose index is ids[t]: the head at t - 1 should look there; start_pos [B, L] int32 = at every label token of
  the screen or a goal, the position of its label's first token)."""
  index_pos = np.zeros(ids.shape, np.int32)
  label = np.zeros(ids.shape, np.float32)
  match_pos = np.zeros(ids.shape, np.int32)
  start_pos = np.zeros(ids.shape, np.int32)
  for r in range(ids.shape[0]):
    start = None
    for t in range(ids.shape[1]):
      if ids[r, t] >= 100:
        start = t if start is None else start
        start_pos[r, t] = start
      elif ids[r, t] < FLAG_TOKENS[0] or ids[r, t] >= FLAG_TOKENS[1]:   # flags sit inside a line's label part
        start = None
    last_label, index_at = {}, 0
    for t in np.nonzero(screen[r])[0]:       # done_share: a history prefix may come before the screen
      if ids[r, t] == LB:
        index_at = t + 1
      elif ids[r, t] >= 100:                  # a label (word or piece) token
        index_pos[r, t], label[r, t] = index_at, 1.0
        last_label[int(ids[r, index_at])] = t
    for t in np.nonzero(answer[r])[0]:
      if ids[r, t] != STOP:                   # STOP points nowhere (its pointer loss is masked)
        match_pos[r, t] = last_label[int(ids[r, t])]
  return index_pos, label, match_pos, start_pos


# ------------------------------------------------------------------ the minimal reference decoder
def reference_init(key, vocab: int, hidden: int, layers: int, std: float = 0.02) -> dict:
  """Params of the reference decoder: normal(std) matrices, unit norms, tied embedding [vocab, hidden]."""
  keys = iter(jax.random.split(key, 7 * layers + 1))
  normal = lambda *shape: std * jax.random.normal(next(keys), shape)
  ff = 3 * hidden
  return {"embed": normal(vocab, hidden), "final_norm": jnp.ones(hidden),
          "layers": [{"q": normal(hidden, hidden), "k": normal(hidden, hidden), "v": normal(hidden, hidden),
                      "o": normal(hidden, hidden), "gate": normal(hidden, ff), "up": normal(hidden, ff),
                      "down": normal(ff, hidden), "norm1": jnp.ones(hidden), "norm2": jnp.ones(hidden)}
                     for _ in range(layers)]}


def _rms(x, scale):
  return scale * x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6)


def _rope(x, positions, theta: float = 10000.0):  # x [B, L, H, D], positions [L]: pairs (i, i + D/2) by pos · θ_i
  d = x.shape[-1]
  angle = positions[:, None] * (1.0 / theta ** (jnp.arange(0, d, 2) / d))
  cos, sin = jnp.cos(jnp.concatenate([angle, angle], -1)), jnp.sin(jnp.concatenate([angle, angle], -1))
  x1, x2 = jnp.split(x, 2, -1)
  return x * cos[:, None] + jnp.concatenate([-x2, x1], -1) * sin[:, None]


def reference_hidden(params: dict, ids: jax.Array, heads: int, rope_theta: float = 10000.0) -> jax.Array:
  """ids [B, L] -> final-normed hidden states [B, L, H] (causal; logits = hidden @ embed.T)."""
  b, length = ids.shape
  x = params["embed"][ids]
  positions = jnp.arange(length, dtype=jnp.float32)
  causal = jnp.tril(jnp.ones((length, length), bool))
  for p in params["layers"]:
    h = _rms(x, p["norm1"])
    split = lambda w: (h @ w).reshape(b, length, heads, -1)
    q, k, v = _rope(split(p["q"]), positions, rope_theta), _rope(split(p["k"]), positions, rope_theta), split(p["v"])
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    att = jax.nn.softmax(jnp.where(causal, scores, -1e30), -1)
    x = x + jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, length, -1) @ p["o"]
    h = _rms(x, p["norm2"])
    x = x + (jax.nn.silu(h @ p["gate"]) * (h @ p["up"])) @ p["down"]
  return _rms(x, params["final_norm"])


# ------------------------------------------------------------------ training
def _model_fns(cfg: LookupProbeConfig):
  """(params, hidden_fn(params, ids) -> (final hidden [B, L, H], the supervised heads' log-attention [B, L, L]:
  () without pointer_weight, else head 0 of the first and of the last layer [and head 1 of the first]),
  logits_fn(params, hidden) -> [..., V])."""
  from flax import nnx

  from gui_jax.models.qwen2_5_vl.config import tiny
  from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration
  from gui_jax.models.qwen2_5_vl.text import mrope_cos_sin
  base = tiny()
  if cfg.model == "reference":
    params = reference_init(jax.random.key(cfg.seed), base.text.vocab_size, cfg.hidden, cfg.layers)
    params = rescale_init(params, cfg.init_gain, residual_gain=cfg.residual_gain) if cfg.init_gain else params
    return (params, lambda p, ids: (reference_hidden(p, ids, cfg.heads, cfg.rope_theta), ()),
            lambda p, h: h @ p["embed"].T)
  half = cfg.hidden // cfg.heads // 2            # M-RoPE bands in Qwen's proportions (1/4 t, 3/8 h, 3/8 w)
  t_band = half // 4
  text = dataclasses.replace(base.text, hidden_size=cfg.hidden, intermediate_size=3 * cfg.hidden,
                             num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads,
                             num_key_value_heads=cfg.kv_heads, rope_theta=cfg.rope_theta,
                             mrope_section=(t_band, (half - t_band) // 2, half - t_band - (half - t_band) // 2))
  model_cfg = base.replace(text=text, vision=dataclasses.replace(base.vision, out_hidden_size=cfg.hidden),
                           tie_word_embeddings=cfg.tie_embeddings)
  graphdef, params, rest = nnx.split(Qwen25VLForConditionalGeneration(model_cfg, rngs=nnx.Rngs(cfg.seed)),
                                     nnx.Param, ...)
  params = rescale_init(params, cfg.init_gain, residual_gain=cfg.residual_gain) if cfg.init_gain else params

  def hidden_fn(p, ids):
    model = nnx.merge(graphdef, p, rest)
    lm = model.language_model
    positions = jnp.broadcast_to(jnp.arange(ids.shape[1])[None, None], (3,) + ids.shape)
    hidden, layer_inputs, _ = lm(lm.embed(ids), positions, ids > 0, output_hidden_states=bool(cfg.pointer_weight))
    if not cfg.pointer_weight:
      return hidden, ()
    cos, sin = mrope_cos_sin(positions, model_cfg.text)
    heads = [head_log_attention(lm.layers[0], layer_inputs[0], cos, sin),
             head_log_attention(lm.layers[cfg.match_layer], layer_inputs[cfg.match_layer % cfg.layers], cos, sin)]
    if cfg.pointer_label_start:
      heads.append(head_log_attention(lm.layers[0], layer_inputs[0], cos, sin, head=1))
    if cfg.index_readout_weight:   # the last entry: layer 0's output, final-normed, scored against the index tokens
      table = model.lm_head[...].T if model.lm_head is not None else lm.embed_tokens[...]
      heads.append(lm.norm(layer_inputs[1]) @ table[INDEX_BASE:INDEX_BASE + 50].T)
    return hidden, tuple(heads)

  return params, hidden_fn, lambda p, h: nnx.merge(graphdef, p, rest).logits_from_hidden(h)


def _print_line(line: str) -> None:
  print(line, flush=True)


# fields that may differ between a run and its resume: the budget and the snapshot period
_RESUMABLE_CHANGES = ("steps", "checkpoint_seconds")


def _save_state(path: str, state: dict) -> None:
  tmp = f"{path}.tmp"
  with open(tmp, "wb") as f:
    pickle.dump(jax.device_get(state), f)
  os.replace(tmp, path)                  # atomic: a kill mid-write leaves the previous snapshot


def _load_state(path: str, cfg: LookupProbeConfig) -> dict | None:
  if not os.path.exists(path):
    return None
  with open(path, "rb") as f:
    state = pickle.load(f)
  # a field added after the snapshot was written had its default then
  defaults = {f.name: f.default for f in dataclasses.fields(LookupProbeConfig)}
  saved = {k: v for k, v in {**defaults, **state["config"]}.items() if k not in _RESUMABLE_CHANGES}
  mine = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in _RESUMABLE_CHANGES}
  if saved != mine:
    diff = sorted(k for k in mine if saved.get(k) != mine[k])
    raise ValueError(f"{path} was written by a probe with other settings ({', '.join(diff)}); use a new "
                     "workdir or the same flags")
  return state


def run_probe(cfg: LookupProbeConfig, log=_print_line, on_eval=None, state_path: str | None = None) -> dict:
  """Trains from random weights; returns {"config", "chance", "curve": [{step, lines, key_words, loss, train_acc,
  held_out_acc, [stage_held_out_acc,] [held_out_stop_acc,] seconds}]}. held_out_acc: greedy accuracy of the first
  goal's answer on `eval_screens` held-out-word screens of the target shape; held_out_stop_acc (done_share > 0):
  how often that answer is STOP exactly where it should be; stage_held_out_acc: the same on screens of the
  curriculum stage being trained (absent in the last stage). Each curve point goes to log (one line) and
  on_eval(point) as it is measured. With state_path, a snapshot is written there every `checkpoint_seconds` and
  at the end, and a run finding one continues from it exactly (same batches, same curve), also after kill -9;
  `steps` may be raised on resume."""
  params, hidden_fn, logits_fn = _model_fns(cfg)
  n_answers = cfg.queries

  def loss_acc(p, ids, answer, screen, index_pos, label, match_pos, start_pos):
    hidden, heads = hidden_fn(p, ids)
    pos = jnp.argsort(-answer, axis=1, stable=True)[:, :n_answers]   # answer positions first
    picked = jnp.take_along_axis(hidden, (pos - 1)[..., None], 1)       # the states that predict them
    logp = jax.nn.log_softmax(logits_fn(p, picked).astype(jnp.float32))
    target = jnp.take_along_axis(ids, pos, 1)
    weight = jnp.take_along_axis(answer, pos, 1)
    nll = -jnp.take_along_axis(logp, target[..., None], -1)[..., 0]
    loss = (nll * weight).sum() / weight.sum()
    acc = ((jnp.argmax(logp, -1) == target) * weight).sum() / weight.sum()
    # done_share: whether the answer stops exactly where it should (the decision alone, the look-up aside)
    decided = (((jnp.argmax(logp, -1) == STOP) == (target == STOP)) * weight).sum() / weight.sum()
    if cfg.screen_lm_weight:
      lm_logp = jax.nn.log_softmax(logits_fn(p, hidden[:, :-1]).astype(jnp.float32))
      lm_nll = -jnp.take_along_axis(lm_logp, ids[:, 1:, None], -1)[..., 0]
      m = screen[:, 1:] * screen[:, :-1]
      loss = loss + cfg.screen_lm_weight * (lm_nll * m).sum() / m.sum()
    if cfg.pointer_weight:   # label tokens -> their index (layer 0); answer predictors -> the matched label
      first = -jnp.take_along_axis(heads[0], index_pos[..., None], -1)[..., 0]
      last = -jnp.take_along_axis(heads[1][:, :-1], match_pos[:, 1:, None], -1)[..., 0]
      matched = answer[:, 1:] * (ids[:, 1:] != STOP)       # a STOP answer matches no line
      loss = loss + cfg.pointer_weight * ((first * label).sum() / jnp.maximum(label.sum(), 1.0)
                                          + (last * matched).sum() / jnp.maximum(matched.sum(), 1.0))
      if cfg.pointer_label_start:
        in_label = (ids >= 100).astype(jnp.float32)
        if cfg.pointer_label_bag:      # uniform over the label's tokens start..t
          keys = jnp.arange(ids.shape[1])
          bag = (keys[None, None] >= start_pos[..., None]) & (keys[None, None] <= keys[None, :, None])
          start = -jnp.where(bag, heads[2], 0.0).sum(-1) / jnp.maximum(bag.sum(-1), 1)
        else:
          start = -jnp.take_along_axis(heads[2], start_pos[..., None], -1)[..., 0]
        loss = loss + cfg.pointer_weight * (start * in_label).sum() / jnp.maximum(in_label.sum(), 1.0)
      if cfg.index_readout_weight:
        read = jax.nn.log_softmax(heads[-1].astype(jnp.float32))          # over the 50 index tokens
        index_id = jnp.take_along_axis(ids, index_pos, 1) - INDEX_BASE
        nll = -jnp.take_along_axis(read, index_id.clip(0, 49)[..., None], -1)[..., 0]
        loss = loss + cfg.index_readout_weight * (nll * label).sum() / jnp.maximum(label.sum(), 1.0)
    return loss, (acc, decided)

  schedule = (optax.linear_schedule(0.0, cfg.learning_rate, max(cfg.warmup, 1)) if cfg.final_lr_fraction == 1.0
              else optax.warmup_cosine_decay_schedule(0.0, cfg.learning_rate, max(cfg.warmup, 1), cfg.steps,
                                                      cfg.learning_rate * cfg.final_lr_fraction))
  opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=0.0))
  opt_state = opt.init(params)

  @jax.jit
  def step(p, o, *batch):
    (loss, (acc, _)), grads = jax.value_and_grad(loss_acc, has_aux=True)(p, *batch)
    updates, o = opt.update(grads, o, p)
    return optax.apply_updates(p, updates), o, loss, acc

  eval_acc = jax.jit(lambda p, *b: loss_acc(p, *b)[1])   # (accuracy, stop decision accuracy)
  eval_rng = np.random.default_rng(cfg.seed + 10_000)
  stages = cfg.stages()
  stage_cfgs = [dataclasses.replace(cfg, lines=lines, key_words=words, curriculum="", min_lines=min(cfg.min_lines, lines))
                for lines, words, _ in stages]
  def make_batch(rng, c, held_out, n, queries):   # lookup_batch plus the pointer targets (zeros when unused)
    ids, answer, screen = lookup_batch(rng, c, held_out, n, queries)
    targets = (pointer_targets(ids, answer, screen) if cfg.pointer_weight else
               (np.zeros_like(ids), np.zeros_like(answer), np.zeros_like(ids), np.zeros_like(ids)))
    return (ids, answer, screen, *targets)

  held_out = [[make_batch(eval_rng, c, True, 64, 1) for _ in range(max(cfg.eval_screens // 64, 1))]
              for c in stage_cfgs]   # the last entry: the target shape

  def held_out_acc(batches) -> tuple[float, float]:   # (accuracy, stop decision accuracy), one pass
    scores = np.asarray([[float(v) for v in eval_acc(params, *b)] for b in batches])
    return tuple(float(v) for v in scores.mean(0))

  rng = np.random.default_rng(cfg.seed)
  curve, stage, in_stage, recent, done, elapsed = [], 0, 0, [], 0, 0.0
  state = _load_state(state_path, cfg) if state_path else None
  if state is not None:
    params, opt_state = state["params"], state["opt_state"]
    rng.bit_generator.state = state["rng"]
    curve, stage, in_stage, recent, done, elapsed = (state[k] for k in ("curve", "stage", "in_stage", "recent",
                                                                          "step", "seconds"))
    # the point an earlier, shorter budget logged at its last step is off the eval grid of a longer run
    curve = [c for c in curve if c["step"] % cfg.eval_every == 0 or c["step"] == cfg.steps]
    log(f"resumed from {state_path} at step {done} (stage {stage + 1} of {len(stages)})")
  start, saved_at = time.time() - elapsed, time.time()

  def snapshot(step_done: int) -> None:
    _save_state(state_path, {"config": dataclasses.asdict(cfg), "params": params, "opt_state": opt_state,
                             "rng": rng.bit_generator.state, "curve": curve, "stage": stage,
                             "in_stage": in_stage, "recent": recent, "step": step_done,
                             "seconds": time.time() - start})

  for s in range(done + 1, cfg.steps + 1):
    if stage < len(stages) - 1 and (in_stage >= stages[stage][2] or (
        cfg.advance_at > 0 and len(recent) == 100 and np.mean(recent) >= cfg.advance_at)):
      stage, in_stage, recent = stage + 1, 0, []
    params, opt_state, loss, acc = step(params, opt_state, *make_batch(rng, stage_cfgs[stage], False,
                                                                         cfg.batch, cfg.queries))
    in_stage += 1
    recent = (recent + [float(acc)])[-100:] if cfg.advance_at > 0 else recent
    if s % cfg.eval_every == 0 or s == cfg.steps:
      target_acc, stop_acc = held_out_acc(held_out[-1])
      point = {"step": s, "lines": stages[stage][0], "key_words": stages[stage][1], "loss": round(float(loss), 4),
               "train_acc": round(float(acc), 4), "held_out_acc": round(target_acc, 4)}
      if cfg.done_share > 0:   # the first goal's answer-or-stop decision alone
        point["held_out_stop_acc"] = round(stop_acc, 4)
      if stage < len(stages) - 1:   # also on screens of the stage being trained
        point["stage_held_out_acc"] = round(held_out_acc(held_out[stage])[0], 4)
      curve.append({**point, "seconds": round(time.time() - start, 1)})
      rate = (curve[-1]["seconds"] - elapsed) / (s - done)        # this segment's seconds per step
      log(" ".join(f"{k} {v}" for k, v in curve[-1].items()) + f" eta_min {rate * (cfg.steps - s) / 60:.0f}")
      if on_eval is not None:
        on_eval(curve[-1])
    if state_path and (s == cfg.steps or time.time() - saved_at >= cfg.checkpoint_seconds):
      snapshot(s)
      saved_at = time.time()
  return {"config": dataclasses.asdict(cfg), "chance": 1.0 / cfg.lines, "curve": curve}
