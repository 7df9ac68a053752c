"""The implicit reward model of a policy: a record scores the probability that the policy itself writes its
candidate action.

Prompt and response are exactly the agent's: the goal, the record's earlier steps as the policy's history (each
written in the policy's dialect), the current screen (`build_messages`), then the candidate as the response the
policy would sample (`action_text`). Score = P(response | prompt) = exp(Σ log π(token)) in [0, 1]: a step the
policy would take scores near 1, a click on another row near 0. For an outcome record the candidate is
terminate(success) after the trajectory, so the score is the policy's probability of stopping there.

No training: this is the baseline a trained verdict RM (rm_scoring.RewardScorer) has to beat, measured with the
same held-out records and metrics (`configs/reward_eval.py --config.rm_eval.scorer=policy_likelihood`).
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import jax
import numpy as np
from flax import nnx

from gui_jax.core.types import Episode
from gui_jax.rewards.data_engine import RewardRecord
from gui_jax.rewards.rm_scoring import action_text, record_parts, step_action, step_observation
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


def _sequence_logprobs(graphdef, params, rest, batch) -> jax.Array:
    """[B] Σ log π over each row's response tokens (the loss mask marks them)."""
    logp, _ = model_forward_logprobs(nnx.merge(graphdef, params, rest), batch)
    return (logp * (batch["loss_mask"] > 0)).sum(axis=1)


_sequence_logprobs_jit = jax.jit(_sequence_logprobs, static_argnums=0)


class LikelihoodScorer:
    """P(candidate | the agent's prompt) per record under `agent`'s params; `score(records)` -> float64 [N]."""

    def __init__(self, agent, episodes: Mapping[str, Episode], pcfg: PromptConfig, *, batch_size: int = 16):
        self.agent, self.episodes, self.pcfg, self.batch_size = agent, episodes, pcfg, int(batch_size)

    def samples(self, records: Sequence[RewardRecord]) -> list[TrainSample]:
        out = []
        for r in records:
            prompt, response = record_prompt_response(r, self.episodes, self.pcfg)
            g = self.agent.policy.encode(prompt, response)
            out.append(TrainSample(g.prompt_ids, g.response_ids, pixel_values=g.pixel_values,
                                   image_grid_thw=g.image_grid_thw))
        return out

    def log_scores(self, records: Sequence[RewardRecord], batch_size: Optional[int] = None) -> np.ndarray:
        """log P(candidate | prompt) per record, float64 [N]."""
        samples = self.samples(list(records))
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

    def score(self, records: Sequence[RewardRecord], batch_size: Optional[int] = None) -> np.ndarray:
        records = list(records)
        if not records:
            return np.zeros(0, np.float64)
        return np.exp(self.log_scores(records, batch_size))
