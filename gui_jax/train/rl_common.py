"""Pieces shared by the RL trainers: the policy-gradient loss, reference log-probs, iteration
checkpoints, and turning sampled generations into training samples."""
from __future__ import annotations

import os
import time
from typing import Callable, Optional, Sequence

import jax
import numpy as np
from flax import nnx

from gui_jax.core.progress import progress
from gui_jax.rl.batch import (TrainSample, drop_cancelled, make_micro_batches, merge_duplicates,
                             model_forward_logprobs)
from gui_jax.rl.losses import combine_loss
from gui_jax.rl.policy import Generation
from gui_jax.train.checkpoint import Checkpointer, checkpoint_metadata
from gui_jax.train.state import TrainState, Updater, init_train_state, make_optimizer


def rl_loss_fn(graphdef, rest, cfg, policy_loss: Callable = combine_loss):
    """`policy_loss` (default PPO-clip + β·KL, docs/algorithms.md §5; any `losses.POLICY_LOSSES` entry) on
    one micro-batch; returns (sum, denominator, metrics)."""
    dual = cfg.get("dual_clip")

    def loss(params, batch, rng):
        model = nnx.merge(graphdef, params, rest)
        logp, _ = model_forward_logprobs(model, batch)
        return policy_loss(logp, batch["old_logp"], batch["advantages"], batch["loss_mask"],
                           ref_logp=batch["ref_logp"] if cfg.kl_coef > 0 else None,
                           kl_coef=cfg.kl_coef, kl_kind=cfg.kl_kind, clip_low=cfg.clip_low,
                           clip_high=cfg.clip_high, dual_clip=dual, agg=cfg.aggregation,
                           step_ids=batch["step_ids"])
    return loss


def make_rl_updater(agent, cfg, policy_loss: Callable = combine_loss) -> Updater:
    opt = make_optimizer(cfg.learning_rate, warmup_steps=cfg.warmup_steps, weight_decay=cfg.weight_decay,
                         max_grad_norm=cfg.max_grad_norm)
    return Updater(rl_loss_fn(agent.graphdef, agent.rest, cfg, policy_loss), opt,
                   compute_dtype=getattr(agent, "compute_dtype", None), rules=getattr(agent, "rules", None))


def reference_params(agent, workdir: str, given=None):
    """The frozen reference policy: `given`, or the params at the start of training. Persisted in
    `<workdir>/reference` on the first start so a resumed run uses the very same reference."""
    from gui_jax.train.checkpoint import load_params, save_params
    path = os.path.join(workdir, "reference")
    if os.path.isdir(path):
        return load_params(path, agent.params)
    ref = given if given is not None else agent.copy_params()
    save_params(ref, path)
    return ref


class RefLogprobs:
    """Log-probs of a frozen reference policy on training batches (jitted, params as an argument)."""

    def __init__(self, agent, ref_params):
        self.ref_params = ref_params
        graphdef, rest = agent.graphdef, agent.rest

        def fn(params, batch):
            return model_forward_logprobs(nnx.merge(graphdef, params, rest), batch)[0]
        self._fn = jax.jit(fn)

    def __call__(self, batch: dict, params=None) -> np.ndarray:
        """[B, L] log-probs of the batch's tokens under the reference (or the given `params`)."""
        return np.asarray(self._fn(self.ref_params if params is None else params, batch))


def aggregate_update_metrics(per_step: Sequence[dict]) -> dict:
    """One metrics dict for an update of several optimizer steps (one per PPO mini-batch).

    Each step's metrics are means over its own tokens; they are combined as a mean weighted by each
    step's loss denominator `tokens` (exact for token_mean aggregation, where the denominator is the
    token count); `tokens` is summed, `grad_norm` averaged (with `grad_norm_max`), NaNs skipped.
    """
    per_step = list(per_step)
    if not per_step:
        return {}
    w = np.array([float(m.get("tokens", 1.0)) for m in per_step])
    out = {}
    for name in per_step[0]:
        vals = np.array([float(m.get(name, np.nan)) for m in per_step])
        ok = ~np.isnan(vals)
        if name == "tokens":
            out[name] = float(vals.sum())
        elif name == "grad_norm":
            out[name] = float(vals[ok].mean()) if ok.any() else float("nan")
            out["grad_norm_max"] = float(vals[ok].max()) if ok.any() else float("nan")
        elif ok.any() and w[ok].sum() > 0:
            out[name] = float(np.sum(vals[ok] * w[ok]) / np.sum(w[ok]))
        else:
            out[name] = float("nan")
    out["mini_batches"] = len(per_step)
    return out


def samples_from_generations(gens: Sequence[Generation], advantages: Sequence[float]) -> list[TrainSample]:
    out = []
    for g, a in zip(gens, advantages):
        if g.response_ids.size == 0:
            continue
        out.append(TrainSample(g.prompt_ids, g.response_ids, advantage=float(a), old_logprobs=g.logprobs,
                               pixel_values=g.pixel_values, image_grid_thw=g.image_grid_thw))
    return out


def micro_batches(agent, samples: Sequence[TrainSample], cfg, ref: Optional[RefLogprobs]) -> list[dict]:
    out = []
    # packing: several steps per row of cfg.row_length tokens (gui_jax/rl/batch.py), rows per micro-batch as
    # cfg.micro_rows.
    for b in make_micro_batches(samples, agent.model_config, pad_id=agent.tokenizer.pad_id,
                                micro_batch_size=cfg.micro_batch_size, packing=bool(cfg.get("packing", False)),
                                row_length=cfg.get("row_length") or None, micro_rows=cfg.get("micro_rows", "fixed")):
        if ref is not None and cfg.kl_coef > 0:
            b["ref_logp"] = ref(b) * (b["loss_mask"] > 0)  # the mask carries sample weights
        out.append(b)
    return out


class IterationCheckpoints:
    """Checkpoint {train state, iteration, side state} every `every` iterations; resume."""

    def __init__(self, workdir: str, every: int, kept: int = 3):
        self.ckpt = Checkpointer(os.path.join(workdir, "checkpoints"), save_every=max(every, 1), max_to_keep=kept)

    def start(self, agent, updater: Updater, seed: int) -> tuple[TrainState, dict]:
        state = init_train_state(agent.copy_params(), updater.optimizer, seed)
        self.ckpt.metadata = checkpoint_metadata(agent)
        restored = self.ckpt.restore_latest(state)
        if restored is None:
            return state, {}
        return restored

    def maybe_save(self, state: TrainState, iteration: int, extra: dict, *, last: bool) -> None:
        """Checkpoint number = iteration; `extra` must hold what resuming needs (data state)."""
        if last or self.ckpt.should_save(iteration):
            self.ckpt.save(state, {**extra, "iteration": iteration}, force=last, ckpt_id=iteration)

    def close(self):
        self.ckpt.close()


class _Indices:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return int(i)


class RLRun:
    """The resumable skeleton of an RL trainer: optimizer + reference + checkpoints + the episode
    iterator (Grain, checkpointed) + per-iteration logging. Trainers supply the rollouts and may
    swap the actor's loss (`policy_loss`, combine_loss's signature)."""

    def __init__(self, agent, n_episodes: int, cfg, *, workdir: str, ref_params=None, prefix: str,
                 logger=None, policy_loss: Callable = combine_loss):
        from absl import logging

        from gui_jax.data.pipeline import list_batch, make_pipeline
        if n_episodes < 1:
            raise ValueError("RL needs at least one training episode")
        self.agent, self.cfg, self.prefix, self.logger = agent, cfg, prefix, logger
        self.updater = make_rl_updater(agent, cfg, policy_loss)
        self.ref = RefLogprobs(agent, reference_params(agent, workdir, ref_params)) if cfg.kl_coef > 0 else None
        # recompute_old_logprobs: π_old = the training forward at the start of the update instead of
        # the sampler's logprobs (they differ when the sampler runs in bf16 or another kernel).
        self.old_logp = None
        if cfg.get("recompute_old_logprobs", False):
            self.old_logp = self.ref if self.ref is not None else RefLogprobs(agent, None)
        self.ck = IterationCheckpoints(workdir, cfg.checkpoint_every, int(cfg.get("checkpoints_kept", 3)))
        self.state, extra = self.ck.start(agent, self.updater, cfg.seed)
        self.data = iter(make_pipeline(_Indices(n_episodes), seed=cfg.seed,
                                       batch_size=min(cfg.episodes_per_iteration, n_episodes), shard_index=0,
                                       shard_count=1, batch_fn=list_batch, num_threads=0))
        self.restored_extra = extra  # what the latest checkpoint carried ({} on a fresh start)
        self.side: dict = {}  # name -> object with state_dict / load_state_dict, checkpointed with the run
        self.iteration = int(extra.get("iteration", 0))
        if extra:
            self.data.set_state(extra["data"])
            agent.set_params(self.state.params)
            logging.info("%s: resumed at iteration %d", prefix, self.iteration)
        self.done_this_run = 0
        self.pbar = progress(total=cfg.iterations, initial=self.iteration, desc=prefix, leave=False)

    @property
    def running(self) -> bool:
        from gui_jax.train.fit import Preempted, install_sigterm_handler, sigterm_requested
        install_sigterm_handler()  # SIGTERM (preemption): checkpoint at this iteration, exit 143
        if sigterm_requested() and self.iteration < self.cfg.iterations:
            self.ck.maybe_save(self.state, self.iteration, self.checkpoint_extra(), last=True)
            self.close()
            raise Preempted(f"{self.prefix}: SIGTERM; checkpoint saved at iteration {self.iteration}")
        stop = self.cfg.get("stop_after_steps")
        if stop is not None and self.done_this_run >= stop and self.iteration < self.cfg.iterations:
            from gui_jax.train.fit import StopRequested
            self.ck.maybe_save(self.state, self.iteration, self.checkpoint_extra(), last=True)
            self.close()
            raise StopRequested(f"{self.prefix}: stopped after {self.done_this_run} iterations as configured")
        return self.iteration < self.cfg.iterations

    def checkpoint_extra(self) -> dict:
        """The JSON side state saved with each checkpoint; trainers with more state (replay buffers,
        curricula) override it and read theirs back from `restored_extra`."""
        return {"data": self.data.get_state(), **{k: v.state_dict() for k, v in self.side.items()}}

    def register_side_state(self, name: str, obj) -> None:
        """Checkpoint `obj` (state_dict / load_state_dict) with the run under `name`; a resumed run loads it."""
        if name in ("data", "iteration") or name in self.side:
            raise ValueError(f"side state name {name!r} is taken")
        if name in self.restored_extra:
            obj.load_state_dict(self.restored_extra[name])
        self.side[name] = obj

    def next_episodes(self) -> list[int]:
        return next(self.data)

    def update(self, samples: Sequence[TrainSample]) -> dict:
        """`num_mini_batches` optimizer steps over `samples` (verl's ppo mini-batches; later ones are
        off-policy by then, which the PPO ratio accounts for); syncs the sampler's weights. Returns
        the metrics of all the steps together (`aggregate_update_metrics`)."""
        if not samples:
            return {}
        start = time.perf_counter()
        cancelled = None
        if self.cfg.get("merge_duplicates", False) and self.cfg.aggregation == "token_mean":
            # one mini-batch: on-policy, every ratio 1, so copies of opposite signs merge too (merge_duplicates)
            on_policy = self.cfg.get("num_mini_batches", 1) == 1 and bool(self.cfg.get("drop_cancelled", False))
            samples = merge_duplicates(samples, across_signs=on_policy)  # the same loss in fewer tokens
            if on_policy:
                samples, cancelled = drop_cancelled(samples)
                if not samples:
                    return {"cancelled_steps": cancelled, "update_seconds": time.perf_counter() - start}
        n_mb = max(1, min(self.cfg.get("num_mini_batches", 1), len(samples)))
        size = -(-len(samples) // n_mb)
        mini = [micro_batches(self.agent, samples[k:k + size], self.cfg, self.ref)
                for k in range(0, len(samples), size)]
        if self.old_logp is not None:  # before any step: the steps donate (invalidate) the params
            for batch in (b for mbs in mini for b in mbs):
                batch["old_logp"] = self.old_logp(batch, self.state.params) * (batch["loss_mask"] > 0)
        per_step = []
        for mbs in mini:
            self.state, metrics = self.updater.step(self.state, mbs)
            per_step.append(metrics)
        self.agent.set_params(self.state.params)
        out = aggregate_update_metrics(per_step)  # floats: waits for the steps to finish
        if cancelled is not None:
            out["cancelled_steps"] = cancelled
        out["update_seconds"] = time.perf_counter() - start
        return out

    def end_iteration(self, metrics: dict) -> None:
        self.iteration += 1
        self.done_this_run += 1
        metrics["optimizer_step"] = self.state.step
        if self.logger is not None:
            self.logger.write(self.iteration, metrics, prefix=self.prefix)
        self.pbar.update(1)
        if "reward_mean" in metrics:
            self.pbar.set_postfix(reward=f"{metrics['reward_mean']:.3f}")
        self.ck.maybe_save(self.state, self.iteration, self.checkpoint_extra(),
                           last=self.iteration >= self.cfg.iterations)

    def close(self) -> dict:
        self.pbar.close()
        self.ck.close()
        self.agent.set_params(self.state.params)
        return {"iterations": self.iteration, "optimizer_steps": self.state.step}
