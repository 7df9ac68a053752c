"""The implicit reward model of a policy: a record scores the probability that the policy itself writes its
candidate action.

Prompt and response are exactly the agent's: the goal, the record's earlier steps as the policy's history (each
written in the policy's dialect), the current screen (`build_messages`), then the candidate as the response the
policy would sample (`action_text`). Score = P(response | prompt) = exp(Σ log π(token)) in [0, 1]: a step the
policy would take scores near 1, a click on another row near 0. For an outcome record the candidate is
terminate(success) after the trajectory, so the score is the policy's probability of stopping there.

As it stands (a policy checkpoint, no training) it is the baseline a trained verdict RM (rm_scoring.RewardScorer)
has to beat, on the same held-out records and metrics (`configs/reward_eval.py --config.rm.model.scorer=
policy_likelihood`). Trained as a reward model (`configs/reward_model.py --config.rm.model.scorer=
policy_likelihood`), the score stays P(response) and the loss is the binary cross-entropy of that probability:
-log π(y|x) on positive records (SFT's likelihood) and -log(1 - π(y|x)) on negative ones (unlikelihood), so a
policy start keeps its look-up and learns where it would take a wrong step.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Mapping, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.core.types import Episode
from gui_jax.rewards.data_engine import RewardRecord
from gui_jax.rewards.rm_scoring import (RewardModelConfig, RewardScorer, action_text, record_parts, step_action,
                                        step_observation)
from gui_jax.rl.batch import TrainSample, build_batch, model_forward_logprobs
from gui_jax.rl.prompting import PromptConfig, build_messages


def record_prompt_response(record: RewardRecord, episodes: Mapping[str, Episode], pcfg: PromptConfig):
    """(agent prompt messages, candidate response text) of a record, in the policy's own format."""
    history, current, cand_ref, candidate = record_parts(record, episodes)
    hist = []
    for ref in history:
        obs = step_observation(episodes, ref)
        hist.append((obs, action_text(episodes, ref, step_action(episodes, ref), obs, pcfg)))
    return build_messages(record.goal, hist, current, pcfg), action_text(episodes, cand_ref, candidate, current, pcfg)


def likelihood_sample(agent, record: RewardRecord, episodes: Mapping[str, Episode], pcfg: PromptConfig, *,
                      weight: float = 1.0) -> TrainSample:
    """The record as the agent's prompt → candidate response; `advantage` = +weight for a positive record,
    -weight for a negative one (the loss reads the label from its sign and the class weight from its size)."""
    if weight <= 0:
        raise ValueError(f"likelihood_sample: weight must be > 0, got {weight}")
    prompt, response = record_prompt_response(record, episodes, pcfg)
    g = agent.policy.encode(prompt, response)
    return TrainSample(g.prompt_ids, g.response_ids, advantage=weight if record.label else -weight,
                       pixel_values=g.pixel_values, image_grid_thw=g.image_grid_thw)


def sequence_logprobs(model, batch) -> jax.Array:
    """[B] Σ log π over each row's response tokens (unpacked rows; the loss mask marks the tokens)."""
    logp, _ = model_forward_logprobs(model, batch)
    return (logp * (batch["loss_mask"] > 0)).sum(axis=1)


def log1mexp(s: jax.Array) -> jax.Array:
    """log(1 - exp(s)) for s < 0, stable at both ends (s is clipped just below 0)."""
    s = jnp.minimum(s, -1e-7)
    return jnp.where(s > -0.6931, jnp.log(-jnp.expm1(s)), jnp.log1p(-jnp.exp(s)))


def likelihood_bce(s: jax.Array, signed: jax.Array, valid: jax.Array):
    """(Σ w·BCE, Σ correct) of records with log π(y|x) = s [B], signed weight ±w [B] (sign = label) and valid [B]
    (0/1 filler mask): -log π for a positive record, -log(1 - π) for a negative one; correct = π > 0.5 agrees."""
    positive = signed > 0
    nll = jnp.where(positive, -s, -log1mexp(s))
    correct = ((s > jnp.log(0.5)) == positive).astype(jnp.float32) * valid
    return (nll * jnp.abs(signed) * valid).sum(), correct.sum()


def likelihood_bce_loss(graphdef, rest):
    """The trainer's loss on a micro-batch of `likelihood_sample` rows: (Σ w·BCE, #rows, metrics)."""
    def loss(params, batch, rng):
        s = sequence_logprobs(nnx.merge(graphdef, params, rest), batch)                 # [B] log π(y|x)
        signed = jnp.take_along_axis(batch["advantages"], batch["target_positions"][:, :1], axis=1)[:, 0]
        valid = batch["target_valid"][:, 0].astype(jnp.float32)                          # [B]
        total, correct = likelihood_bce(s, signed, valid)
        return total, valid.sum(), {"label_acc": (correct, valid.sum())}
    return loss


@partial(jax.jit, static_argnums=0)
def _sequence_logprobs_jit(graphdef, params, rest, batch) -> jax.Array:
    """sequence_logprobs with the model split (graphdef static: one program per model structure and shape)."""
    return sequence_logprobs(nnx.merge(graphdef, params, rest), batch)


def history_prefixes(record: RewardRecord, episodes: Mapping[str, Episode]) -> list[RewardRecord]:
    """The step records of a record's earlier steps, each judged after the steps before it ([] for a first step)."""
    history = record_parts(record, episodes)[0]
    return [RewardRecord("step", record.goal, tuple(history[:j + 1]), True, "expert") for j in range(len(history))]


def gated_history_min(own: np.ndarray, history: Sequence[np.ndarray], gate: float = 1.0) -> np.ndarray:
    """log-scores [N]: each record's own log P [N] lowered to the least of its earlier steps' log P (history[i],
    one per earlier step) that fall below log(gate); gate 1.0 = the plain minimum over every earlier step, a lower
    gate lets only the steps the policy holds confidently wrong (P < gate) mark the record."""
    cut = np.log(gate)
    return np.array([min([s] + [h for h in hs if h < cut]) for s, hs in zip(own, history)], np.float64)


def prefix_min_scores(records: Sequence[RewardRecord], episodes: Mapping[str, Episode], scores: np.ndarray,
                      score_missing: Optional[Callable[[list], np.ndarray]] = None) -> np.ndarray:
    """[N] each record's score [N] lowered to the least score of its earlier steps (history_min at gate 1.0,
    Math-Shepherd's minimum over a trajectory's steps), from scores already given: an earlier step is looked up
    among `records`' own step records by (goal, steps), which a step record's score depends on alone; the
    prefixes no record covers are scored once by score_missing(prefix records) -> [M] (an error without it)."""
    scores = np.asarray(scores, np.float64)
    if scores.shape != (len(records),):
        raise ValueError(f"prefix_min_scores: {scores.shape[0] if scores.ndim else 0} scores for "
                         f"{len(records)} records")
    known = {(r.goal, r.steps): float(s) for r, s in zip(records, scores) if r.kind == "step"}
    prefixes = [history_prefixes(r, episodes) for r in records]
    missing = list(dict.fromkeys(q for qs in prefixes for q in qs if (q.goal, q.steps) not in known))
    if missing:
        if score_missing is None:
            raise ValueError(f"prefix_min_scores: {len(missing)} earlier steps are no step record here (first: goal "
                             f"{missing[0].goal!r}, {len(missing[0].steps)} steps) and no scorer was given")
        got = np.asarray(score_missing(missing), np.float64)
        if got.shape != (len(missing),):
            raise ValueError(f"prefix_min_scores: score_missing returned {got.shape} for {len(missing)} prefixes")
        known.update({(q.goal, q.steps): float(s) for q, s in zip(missing, got)})
    return np.array([min([s] + [known[(q.goal, q.steps)] for q in qs]) for s, qs in zip(scores, prefixes)],
                    np.float64)


class LikelihoodScorer:
    """P(candidate | the agent's prompt) per record under `agent`'s params; `score(records)` -> float64 [N].
    history_min: a record's score is the lowest of that and P(step | its history) of each earlier step below
    history_gate (1.0: every earlier step)."""

    def __init__(self, agent, episodes: Mapping[str, Episode], pcfg: PromptConfig, *, batch_size: int = 16,
                 history_min: bool = False, history_gate: float = 1.0):
        self.agent, self.episodes, self.pcfg, self.batch_size = agent, episodes, pcfg, int(batch_size)
        self.history_min, self.history_gate = bool(history_min), float(history_gate)

    def samples(self, records: Sequence[RewardRecord]) -> list[TrainSample]:
        return [likelihood_sample(self.agent, r, self.episodes, self.pcfg) for r in records]

    def log_components(self, records: Sequence[RewardRecord], batch_size: Optional[int] = None
                       ) -> tuple[np.ndarray, list[np.ndarray]]:
        """(log P(candidate | prompt) per record [N], per record the log P of each earlier step given its own
        history [len(history)]); each distinct prefix scored once."""
        records = list(records)
        prefixes = [history_prefixes(r, self.episodes) for r in records]
        unique = list(dict.fromkeys(q for qs in prefixes for q in qs))    # records hash by (goal, steps, ...)
        own = self.log_scores_of_samples(self.samples(records), batch_size)
        prefix = dict(zip(unique, self.log_scores_of_samples(self.samples(unique), batch_size)))
        return own, [np.array([prefix[q] for q in qs], np.float64) for qs in prefixes]

    def log_scores(self, records: Sequence[RewardRecord], batch_size: Optional[int] = None) -> np.ndarray:
        """log P(candidate | prompt) per record, float64 [N]; with history_min, gated_history_min of
        log_components."""
        records = list(records)
        if not self.history_min:
            return self.log_scores_of_samples(self.samples(records), batch_size)
        return gated_history_min(*self.log_components(records, batch_size), self.history_gate)

    def log_scores_of_samples(self, samples: Sequence[TrainSample], batch_size: Optional[int] = None) -> np.ndarray:
        """log P(response | prompt) per encoded sample, float64 [N] (batches sorted by prompt length)."""
        bs = batch_size or self.batch_size
        order = sorted(range(len(samples)), key=lambda i: (len(samples[i].prompt_ids), i))
        out = np.zeros(len(samples), np.float64)
        for start in range(0, len(order), bs):
            idx = order[start:start + bs]
            batch = build_batch([samples[i] for i in idx], self.agent.model_config,
                                pad_id=self.agent.tokenizer.pad_id, rows=bs)
            lp = _sequence_logprobs_jit(self.agent.graphdef, self.agent.params, self.agent.rest, batch)
            out[idx] = np.asarray(jax.device_get(lp), np.float64)[: len(idx)]
        return out

    def score_samples(self, samples: Sequence[TrainSample], batch_size: Optional[int] = None) -> np.ndarray:
        """P(response | prompt) per encoded sample, float64 [N] (RewardScorer's interface)."""
        return np.exp(self.log_scores_of_samples(list(samples), batch_size)) if samples else np.zeros(0, np.float64)

    def score(self, records: Sequence[RewardRecord], batch_size: Optional[int] = None) -> np.ndarray:
        records = list(records)
        if not records:
            return np.zeros(0, np.float64)
        return np.exp(self.log_scores(records, batch_size))


def make_scorer(agent, episodes: Mapping[str, Episode], pcfg: PromptConfig, rcfg: RewardModelConfig):
    """The record scorer `rcfg.scorer` names: RewardScorer (verdict) or LikelihoodScorer; both `.score(records)`."""
    if rcfg.scorer == "policy_likelihood":
        return LikelihoodScorer(agent, episodes, pcfg, batch_size=rcfg.batch_size, history_min=rcfg.history_min,
                                history_gate=rcfg.history_gate)
    return RewardScorer(agent, episodes, pcfg, rcfg)
