"""Supervised fine-tuning on expert episodes (reasoning-free: the expert action, empty thought).

Each training example is one step of an expert episode, prompted with the expert history
(MobileRL §2.1 reasoning-free SFT; UI-S1's SFT stage). Loss: token-mean NLL of the response.
"""
from __future__ import annotations

import os

from typing import Optional, Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from gui_jax.core.types import Action, Episode
from gui_jax.models.qwen2_5_vl.layers import dense
from gui_jax.models.qwen2_5_vl.text import mrope_cos_sin
from gui_jax.models.sampling import first_argmax
from gui_jax.data.pipeline import LengthGroupedSource, list_batch, make_pipeline
from gui_jax.rl.batch import TrainSample, model_forward_logprobs
from gui_jax.rl.prompting import PromptConfig, build_messages, expert_response
from gui_jax.rl.semi_online_rollout import expert_element
from gui_jax.train.copy_warmup import maybe_copy_warmup
from gui_jax.train.fit import fit
from gui_jax.train.grounding import grounding_instruction, sample_grounding
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.state import Updater, make_optimizer


def expert_history(ep: Episode, t: int, pcfg: PromptConfig, thoughts: Optional[Sequence[str]] = None):
    return [(ep.observations[k], expert_response(ep.actions[k], ep.observations[k], pcfg,
                                                 thought=(thoughts[k] if thoughts else ""),
                                                 element=expert_element(ep, k)))
            for k in range(t)]


class SFTSource:
    """Random access over (episode, step) → TrainSample with the expert response as target."""

    def __init__(self, agent, episodes: Sequence[Episode], pcfg: PromptConfig,
                 thoughts: Optional[dict] = None, only_thought_steps: bool = False,
                 grounding_fraction: float = 0.0, grounding_instruction: str = "", seed: int = 0):
        self.agent, self.episodes, self.pcfg = agent, list(episodes), pcfg
        self.thoughts = thoughts or {}  # (episode index, step) -> thought (reasoning SFT)
        self.index = [(e, t) for e, ep in enumerate(self.episodes) for t in range(len(ep.actions))
                      if not only_thought_steps or (e, t) in self.thoughts]
        if not self.index:
            raise ValueError("SFT needs at least one expert step; got no episodes/steps")
        # grounding items (train/grounding.py) follow the expert steps: (episode, step, element, label)
        self.grounding = sample_grounding(self.episodes, pcfg, n_expert_steps=len(self.index),
                                          fraction=grounding_fraction, seed=seed)
        self.instruction = grounding_instruction or None

    def __len__(self):
        return len(self.index) + len(self.grounding)

    def __getitem__(self, i: int) -> TrainSample:
        if i >= len(self.index):
            e, t, k, label = self.grounding[i - len(self.index)]
            obs = self.episodes[e].observations[t]
            prompt = build_messages(grounding_instruction(label, self.instruction), [], obs, self.pcfg)
            target = expert_response(Action("click", element=k), obs, self.pcfg, element=k)
            return self._sample(prompt, target)
        e, t = self.index[i]
        ep = self.episodes[e]
        th = [self.thoughts.get((e, k), "") for k in range(len(ep.actions))]
        prompt = build_messages(ep.goal, expert_history(ep, t, self.pcfg, th), ep.observations[t], self.pcfg)
        target = expert_response(ep.actions[t], ep.observations[t], self.pcfg, thought=th[t],
                                 element=expert_element(ep, t))
        return self._sample(prompt, target)

    def _sample(self, prompt, target: str) -> TrainSample:
        g = self.agent.policy.encode(prompt, target)
        return TrainSample(g.prompt_ids, g.response_ids, advantage=1.0, pixel_values=g.pixel_values,
                           image_grid_thw=g.image_grid_thw)


def prompt_targets(batch: dict, image_token_id: int) -> jax.Array:
    """[B, L-1] 1.0 where token j+1 is a prompt token predictable from token j of the same sample:
    both attended, same packed segment, j+1 outside the response (loss_mask) and not an image pad."""
    ids, attn = jnp.asarray(batch["input_ids"]), jnp.asarray(batch["attention_mask"]).astype(bool)
    same = attn[:, 1:] & attn[:, :-1]
    if "segment_ids" in batch:
        seg = jnp.asarray(batch["segment_ids"])
        same = same & (seg[:, 1:] == seg[:, :-1])
    keep = same & (jnp.asarray(batch["loss_mask"])[:, 1:] == 0) & (ids[:, 1:] != image_token_id)
    return keep.astype(jnp.float32)


def chunked_next_token_nll(logits_fn, hidden: jax.Array, ids: jax.Array, weights: jax.Array,
                           chunk: int = 0) -> jax.Array:
    """Σ weights[b, j] · −log p(ids[b, j+1] | hidden[b, j]) over all j. hidden [B, L, H]; ids [B, L];
    weights [B, L-1]. chunk > 0: the LM head runs on `chunk` positions at a time under remat, so neither
    pass holds more than [B, chunk, V] logits (a 152k vocabulary over a 12k-token prompt would be 3.6 GB
    per row in bf16); 0 = all positions at once."""
    h, y, w = hidden[:, :-1], jnp.asarray(ids)[:, 1:], weights

    def part(h_c, y_c, w_c):
        lp = jax.nn.log_softmax(logits_fn(h_c).astype(jnp.float32), axis=-1)
        return -(jnp.take_along_axis(lp, y_c[..., None], axis=-1)[..., 0] * w_c).sum()

    n = h.shape[1]
    if chunk <= 0 or chunk >= n:
        return part(h, y, w)
    pad = -n % chunk                      # zero-weight padding to a whole number of chunks
    h = jnp.pad(h, ((0, 0), (0, pad), (0, 0)))
    y, w = jnp.pad(y, ((0, 0), (0, pad))), jnp.pad(w, ((0, 0), (0, pad)))
    k = (n + pad) // chunk
    split = lambda x: jnp.moveaxis(x.reshape(x.shape[0], k, chunk, *x.shape[2:]), 1, 0)
    step = jax.checkpoint(lambda acc, xs: (acc + part(*xs), None))
    total, _ = jax.lax.scan(step, jnp.zeros((), jnp.float32), (split(h), split(y), split(w)))
    return total


def sft_loss_fn(graphdef, rest, prompt_loss_weight: float = 0.0, prompt_loss_chunk: int = 0,
                pointer_weight: float = 0.0, pointer_layout: Optional[dict] = None,
                readout_weight: float = 0.0, readout_ids: Sequence[int] = (), answer_weight: float = 0.0,
                readout_scale: str = "own", value_readout_weight: float = 0.0):
    """(Σ −log p(response tokens) + w·Σ −log p(prompt tokens), #response tokens, metrics) for one
    micro-batch. w = `prompt_loss_weight` (0: the response alone): next-token loss on the prompt gives
    the model dense copy targets (e.g. the goal repeated after the screen), not just one action.
    pointer_weight > 0 with a batch that has "pointers": + pointer_weight · #response tokens · Σ over the
    hops of `pointer_layout` ({hop: (layer, head)}) of the mean attention cross-entropy
    (train/attention_pointers.py), so after the division by the token count each hop weighs `pointer_weight`;
    readout_weight > 0: + readout_weight · the same of the index hops' readout over the tokens `readout_ids`
    (the index digits; attention_pointers.pointer_ce, with its `readout_scale`); answer_weight > 0:
    + answer_weight · #response tokens · the mean −log p of the answer tokens alone (the tokens the match and
    read_match hops predict), so the look-up's answer weighs as much as one hop however long the response is;
    value_readout_weight > 0: + value_readout_weight · the same of the read_match hop's readout over the whole
    vocabulary (the copy of a read value's tokens)."""
    from gui_jax.train.attention_pointers import READOUT_HOPS, pointer_ce

    def loss(params, batch, rng):
        model = nnx.merge(graphdef, params, rest)
        pointers = pointer_weight > 0 and "pointers" in batch
        out = model_forward_logprobs(model, batch, with_hidden=prompt_loss_weight > 0, with_layers=pointers)
        logp, logits = out[:2]
        m = batch["loss_mask"]
        targets = jnp.take_along_axis(batch["input_ids"], batch["target_positions"], axis=1)
        correct = (first_argmax(logits) == targets) & batch["target_valid"]
        correct = correct.astype(jnp.float32)
        n = m.sum()
        total = -(logp * m).sum()
        metrics = {"token_acc": correct.sum() / jnp.maximum(n, 1.0)}
        if prompt_loss_weight > 0:
            keep = prompt_targets(batch, model.cfg.image_token_id)
            prompt_sum = chunked_next_token_nll(model.logits_from_hidden, out[2], batch["input_ids"], keep,
                                                prompt_loss_chunk)
            total = total + prompt_loss_weight * prompt_sum
            metrics["prompt_nll"] = prompt_sum / jnp.maximum(keep.sum(), 1.0)
        if pointers:
            lm = model.language_model
            if lm.scan_layers:
                raise ValueError("attention pointers need model.scan_layers=False (they read single layers)")
            cos, sin = mrope_cos_sin(batch["position_ids"], lm.cfg)
            segments = batch.get("segment_ids", batch["attention_mask"].astype(jnp.int32))
            vocab = model.lm_head[...].T if model.lm_head is not None else lm.embed_tokens[...]       # [V, H]
            readout = None
            if readout_weight > 0:
                readout = (batch["input_ids"], jnp.asarray(readout_ids, jnp.int32),
                           _unembedder(lm.norm, vocab[jnp.asarray(readout_ids)]))                   # over [D, H]
            value_readout = (batch["input_ids"], _unembedder(lm.norm, vocab)) if value_readout_weight > 0 else None
            ce, _ = pointer_ce(lm.layers, out[-1], cos, sin, batch["pointers"], segments, pointer_layout, readout,
                               readout_scale, value_readout)
            hops = sum(v for k, v in ce.items() if not k.startswith("readout_"))
            reads = sum(v for k, v in ce.items() if k.startswith("readout_") and k != "readout_read_match")
            total = total + n * (pointer_weight * hops + readout_weight * reads
                                 + value_readout_weight * ce.get("readout_read_match", 0.0))
            metrics.update({f"pointer_ce_{k}": v for k, v in ce.items()})
            if answer_weight > 0:
                answer_nll = _answer_nll(logp, batch["pointers"])
                total = total + n * answer_weight * answer_nll
                metrics["answer_nll"] = answer_nll
        elif pointer_weight > 0 and pointer_layout:
            # a micro-batch with no pointed item (e.g. only state items) still reports every pointer metric, as an
            # empty (sum, count) pair: the micro-batch accumulator needs the same metric names in every micro-batch
            names = list(pointer_layout) + [f"readout_{h}" for h in READOUT_HOPS
                                            if readout_weight > 0 and h in pointer_layout]
            names += ["readout_read_match"] if value_readout_weight > 0 and "read_match" in pointer_layout else []
            metrics.update({f"pointer_ce_{k}": (jnp.zeros(()), jnp.zeros(())) for k in names})
            if answer_weight > 0:
                metrics["answer_nll"] = (jnp.zeros(()), jnp.zeros(()))
        return total, n, metrics
    return loss


def _unembedder(norm, table):
    """h [..., H] (, rms) → logits [..., rows of table [N, H]] through the final norm; rms given: h's share of the
    logits of a residual stream with that RMS (the norm's scale times h / rms)."""
    def unembed(h, rms=None):
        normed = norm(h) if rms is None else norm.scale[...] * (h / rms).astype(h.dtype)
        return dense(normed, table.astype(h.dtype), "...h,vh->...v")
    return unembed


def _answer_nll(logp, pointers):
    """Mean −log p of the answer tokens: the token after each match / match_next / read_match query (the index
    digits, the token closing a one-digit index, a read value's tokens and its closing quote). logp [B, L] (0 off
    the response), pointers int32 [B, K, 4] (hop, query, lo, hi; hop −1 = padding)."""
    from gui_jax.train.attention_pointers import HOPS
    hop, q = pointers[..., 0], pointers[..., 1]
    answer = sum((hop == HOPS.index(h)) for h in ("match", "match_next", "read_match")).astype(jnp.float32)  # [B, K]
    at = jnp.minimum(q + 1, logp.shape[1] - 1)
    rows = jnp.arange(logp.shape[0])[:, None]
    weight = jnp.zeros(logp.shape, jnp.float32).at[rows, at].max(answer)      # each answer token once
    return -(logp * weight).sum() / jnp.maximum(weight.sum(), 1.0)


def train_sft(agent, episodes: Sequence[Episode], pcfg: PromptConfig, cfg, *, workdir: str,
              logger: Optional[MetricsLogger] = None, prefix: str = "sft",
              thoughts: Optional[dict] = None, only_thought_steps: bool = False) -> dict:
    """Trains agent.params in place on the expert steps of `episodes`. cfg: the `sft` config block."""
    source = SFTSource(agent, episodes, pcfg, thoughts, only_thought_steps,
                       grounding_fraction=float(cfg.get("grounding_fraction", 0.0)),
                       grounding_instruction=cfg.get("grounding_instruction", ""), seed=cfg.seed)
    if cfg.get("group_by_length", False):
        # batches of similar prompt lengths: padding to the longest row costs ~40 % of the tokens
        # on the quickstart's mix (mean 266 tokens, padded rows 459 on average)
        lengths = [len(source[i]) for i in range(len(source))]
        epochs = -(-cfg.num_steps * cfg.batch_size // max(len(source) - cfg.batch_size, 1)) + 1
        grouped = LengthGroupedSource(source, lengths, batch_size=cfg.batch_size, seed=cfg.seed, epochs=epochs)
        pipeline = make_pipeline(grouped, seed=None, batch_size=cfg.batch_size, shard_index=0, shard_count=1,
                                 batch_fn=list_batch, num_threads=0, drop_remainder=True)
    else:
        pipeline = make_pipeline(source, seed=cfg.seed, batch_size=cfg.batch_size, shard_index=0,
                                 shard_count=1, batch_fn=list_batch, num_threads=0, drop_remainder=False)
    data_iter = iter(pipeline)
    ckpt_dir = os.path.join(workdir, "checkpoints")  # a stage with a step folder there resumes from it
    resuming = os.path.isdir(ckpt_dir) and any(n.isdigit() for n in os.listdir(ckpt_dir))
    warm = maybe_copy_warmup(agent, cfg, resuming=resuming, logger=logger)
    optimizer = make_optimizer(cfg.learning_rate, warmup_steps=cfg.warmup_steps,
                               weight_decay=cfg.weight_decay, max_grad_norm=cfg.max_grad_norm,
                               total_steps=cfg.num_steps, schedule=cfg.get("schedule", "constant"))
    updater = Updater(sft_loss_fn(agent.graphdef, agent.rest, float(cfg.get("prompt_loss_weight", 0.0)),
                                  int(cfg.get("prompt_loss_chunk", 0))), optimizer,
                      compute_dtype=getattr(agent, "compute_dtype", None), rules=getattr(agent, "rules", None))
    state = fit(agent, updater, data_iter, num_steps=cfg.num_steps, workdir=workdir, logger=logger,
                prefix=prefix, micro_batch_size=cfg.micro_batch_size, seed=cfg.seed,
                checkpoint_every=cfg.checkpoint_every, stop_after_steps=cfg.get("stop_after_steps"),
                checkpoints_kept=int(cfg.get("checkpoints_kept", 3)),
                packing=bool(cfg.get("packing", False)), row_length=cfg.get("row_length") or None,
                micro_rows=cfg.get("micro_rows", "fixed"))
    agent.set_params(state.params)
    return {"steps": state.step, "examples": len(source), **({"copy_warmup": warm} if warm else {})}
