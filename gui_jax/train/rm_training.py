"""Reward-model training: cross-entropy on the label token only (UI-Genie Eq. 1, GUI-Shepherd Eq. 2).

Each RewardRecord becomes one TrainSample whose response is exactly one token, the label (" yes" / " no"),
so the batch builder's loss mask covers one position per record (an optional rationale sits in the prompt,
untrained). Class balancing (`balance`), by (kind, label) group so outcome and step classes both count:
  reweight: each record's loss weight = (N / G) / N_group (G groups present; the mean weight is 1), carried
            in the sample's `advantage`;
  sample:   every group is repeated (cyclically) to the size of the largest group, weights 1;
  none:     the data as built.
Loss per micro-batch: Σ_rows w · nll(label) over valid rows / #rows (`over` = 'vocab': LM cross-entropy
over the whole vocabulary; 'pair': binary cross-entropy over the two label logits), plus
`prompt_loss_weight` · Σ next-token nll over the prompt tokens (0 by default; the same dense copy signal as
SFT's: a target at every prompt position, not one label per record). Resumable through
train/fit.py (params, optimizer, step, rng and the Grain iterator state are checkpointed).
With `rm.model.scorer = policy_likelihood` a record is instead the agent's prompt → its candidate action, and the
loss is the binary cross-entropy of the policy's probability of that response (gui_jax/rewards/likelihood.py).
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import jax.numpy as jnp
from flax import nnx

from gui_jax.core.types import Episode
from gui_jax.data.pipeline import list_batch, make_pipeline
from gui_jax.models.heads import label_token_nll
from gui_jax.rewards.data_engine import RewardRecord
from gui_jax.rewards.likelihood import likelihood_bce_loss, likelihood_sample
from gui_jax.rewards.rm_scoring import RewardModelConfig, label_ids, rm_sample
from gui_jax.rl.batch import TrainSample, model_forward_logprobs
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.fit import fit
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.sft import chunked_next_token_nll, prompt_targets
from gui_jax.train.state import Updater, make_optimizer

BALANCE_MODES = ("reweight", "sample", "none")
# SFT options of the shared block that RM training does not implement, with their off values
SFT_ONLY_OPTIONS = {"packing": False, "grounding_fraction": 0.0, "group_by_length": False, "copy_warmup_steps": 0}


def check_rm_train_block(cfg) -> None:
    """Refuses SFT-only options set on an RM training block: they would otherwise be silently ignored."""
    on = [f"{k}={cfg.get(k)!r}" for k, off in SFT_ONLY_OPTIONS.items() if cfg.get(k, off) != off]
    if on:
        raise ValueError(f"rm.train: {', '.join(on)} are SFT options that reward-model training does not "
                         f"implement; leave them at {SFT_ONLY_OPTIONS}")


def balance_plan(records: Sequence[RewardRecord], mode: str) -> tuple[list[int], list[float]]:
    """(record index per training element, loss weight per element) for a balancing mode."""
    if mode not in BALANCE_MODES:
        raise ValueError(f"reward-model balance must be one of {BALANCE_MODES}, got {mode!r}")
    groups: dict = {}
    for i, r in enumerate(records):
        groups.setdefault((r.kind, bool(r.label)), []).append(i)
    n = len(records)
    if mode == "none" or not n:
        return list(range(n)), [1.0] * n
    if mode == "reweight":
        w = {g: (n / len(groups)) / len(ix) for g, ix in groups.items()}
        return list(range(n)), [w[(r.kind, bool(r.label))] for r in records]
    biggest = max(len(ix) for ix in groups.values())
    index = []
    for g in sorted(groups):
        ix = groups[g]
        index += [ix[k % len(ix)] for k in range(biggest)]
    return index, [1.0] * len(index)


class RewardSource:
    """Random access: element i → TrainSample of its record, label token as the one trained token."""

    def __init__(self, agent, records: Sequence[RewardRecord], episodes: Mapping[str, Episode],
                 pcfg: PromptConfig, rcfg: RewardModelConfig, balance: str = "reweight"):
        if not records:
            raise ValueError("reward-model training needs at least one record")
        self.agent, self.records, self.episodes, self.pcfg, self.rcfg = agent, list(records), episodes, pcfg, rcfg
        self.index, self.weights = balance_plan(self.records, balance)

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i: int) -> TrainSample:
        r = self.records[self.index[i]]
        if self.rcfg.scorer == "policy_likelihood":
            return likelihood_sample(self.agent, r, self.episodes, self.pcfg, weight=self.weights[i])
        return rm_sample(self.agent, r, self.episodes, self.pcfg, self.rcfg,
                         rationale=str(r.info.get("rationale", "")), weight=self.weights[i])


def rm_loss_fn(graphdef, rest, pos_id: int, neg_id: int, over: str = "vocab", prompt_loss_weight: float = 0.0,
               prompt_loss_chunk: int = 0):
    """(Σ w·nll(label) + prompt_loss_weight·Σ prompt nll, #records, metrics) for one micro-batch of
    `rm_sample` rows."""
    def loss(params, batch, rng):
        model = nnx.merge(graphdef, params, rest)
        out = model_forward_logprobs(model, batch, with_hidden=prompt_loss_weight > 0)
        logits = out[1][:, 0]                                                    # [B, V] at the label
        at = batch["target_positions"][:, :1]                                    # [B, 1] label position
        target = jnp.take_along_axis(batch["input_ids"], at, axis=1)[:, 0]       # [B]
        weight = jnp.take_along_axis(batch["advantages"], at, axis=1)[:, 0]      # [B]
        valid = batch["target_valid"][:, 0].astype(jnp.float32)                  # [B] (filler rows: 0)
        labels = target == pos_id
        nll = label_token_nll(logits, labels, pos_id, neg_id, over)
        d = logits[:, pos_id].astype(jnp.float32) - logits[:, neg_id].astype(jnp.float32)
        correct = ((d > 0) == labels).astype(jnp.float32) * valid
        total = (nll * weight * valid).sum()
        metrics = {"label_acc": (correct.sum(), valid.sum())}
        if prompt_loss_weight > 0:
            keep = prompt_targets(batch, model.cfg.image_token_id)
            prompt_sum = chunked_next_token_nll(model.logits_from_hidden, out[2], batch["input_ids"], keep,
                                                prompt_loss_chunk)
            total = total + prompt_loss_weight * prompt_sum
            metrics["prompt_nll"] = (prompt_sum, keep.sum())
        return total, valid.sum(), metrics
    return loss


def train_reward_model(agent, records: Sequence[RewardRecord], episodes: Mapping[str, Episode],
                       pcfg: PromptConfig, rcfg: RewardModelConfig, cfg, *, workdir: str,
                       logger: Optional[MetricsLogger] = None, prefix: str = "rm") -> dict:
    """Trains agent.params in place on `records`. cfg: an sft-like block plus `balance` and `loss_over`."""
    check_rm_train_block(cfg)
    source = RewardSource(agent, records, episodes, pcfg, rcfg, balance=cfg.get("balance", "reweight"))
    pipeline = make_pipeline(source, seed=cfg.seed, batch_size=cfg.batch_size, shard_index=0, shard_count=1,
                             batch_fn=list_batch, num_threads=0, drop_remainder=False)
    optimizer = make_optimizer(cfg.learning_rate, warmup_steps=cfg.warmup_steps, weight_decay=cfg.weight_decay,
                               max_grad_norm=cfg.max_grad_norm, total_steps=cfg.num_steps,
                               schedule=cfg.get("schedule", "constant"))
    if rcfg.scorer == "policy_likelihood":
        if cfg.get("prompt_loss_weight", 0.0) or cfg.get("loss_over", "vocab") != "vocab":
            raise ValueError("rm.train.prompt_loss_weight / loss_over apply to the verdict scorer; the "
                             "policy_likelihood RM trains the candidate's own probability (leave them at 0 / vocab)")
        loss_fn = likelihood_bce_loss(agent.graphdef, agent.rest)
    else:
        pos_id, neg_id = label_ids(agent.tokenizer, rcfg)
        loss_fn = rm_loss_fn(agent.graphdef, agent.rest, pos_id, neg_id, cfg.get("loss_over", "vocab"),
                             float(cfg.get("prompt_loss_weight", 0.0)), int(cfg.get("prompt_loss_chunk", 0)))
    updater = Updater(loss_fn, optimizer, compute_dtype=getattr(agent, "compute_dtype", None),
                      rules=getattr(agent, "rules", None))
    state = fit(agent, updater, iter(pipeline), num_steps=cfg.num_steps, workdir=workdir, logger=logger,
                prefix=prefix, micro_batch_size=cfg.micro_batch_size, seed=cfg.seed,
                checkpoint_every=cfg.checkpoint_every, stop_after_steps=cfg.get("stop_after_steps"))
    agent.set_params(state.params)
    return {"steps": state.step, "examples": len(source), "records": len(records)}


def reward_model_block():
    """Default `rm_train` config block (an sft block plus the RM knobs)."""
    from gui_jax.train.config_blocks import sft_block
    c = sft_block()
    c.balance = "reweight"      # reweight | sample | none (by (kind, label) group)
    c.loss_over = "vocab"       # vocab (LM cross-entropy, UI-Genie) | pair (two-label softmax)
    return c


__all__ = ["BALANCE_MODES", "SFT_ONLY_OPTIONS", "check_rm_train_block", "balance_plan", "RewardSource",
           "rm_loss_fn", "train_reward_model", "reward_model_block"]
