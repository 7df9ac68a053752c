"""The unified step/outcome reward model (docs/algorithms.md §9; UI-Genie unified RM, GUI-Shepherd PRM).

One prompt form for both questions a `RewardRecord` asks:
  user turn:  Goal; "Earlier steps:" one text line per old step (its `action_desc`, else the action);
              the last `history_images` steps interleaved, each as its observation (screenshot and/or UI
              text, as the PromptConfig allows) followed by "Action: <response in the dialect>";
              the current observation; "Candidate action: <candidate in the dialect>"; the question.
  assistant:  [rationale + "\nVerdict:"] then ONE label token: `label_pos` (correct) or `label_neg`.
kind "step": history = steps[:-1], current screen = the screen of steps[-1], candidate = its action.
kind "outcome": history = the whole trajectory (a final `terminate` step is the candidate itself, so it is
  dropped from the history), current screen = the screen after the last history step, candidate =
  terminate(success) — the task reward is the step reward of claiming completion now.

Label tokens: two ordinary vocabulary words, " yes" / " no" by default: a single id each in both the tiny
SentencePiece vocabulary (617 / 443) and Qwen2.5's BPE, so no new embedding rows are needed and the
exported RM is a plain Qwen2.5-VL checkpoint. `RewardScorer` checks that each encodes to one id.
Score: P(+) = softmax over the two label logits = sigmoid(logit_pos − logit_neg) at the label position.

Batched scoring: records sorted by prompt length, chunked into `batch_size` rows, padded to the batch
builder's length / row buckets (right padding: the causal model's valid positions never see the pads), so
a run compiles one program per bucket and batched scores equal one-by-one scores.
"""
from __future__ import annotations

import dataclasses
from functools import partial
from typing import Callable, Mapping, Optional, Sequence

import jax
import numpy as np
from flax import nnx

from gui_jax.core.dialects import format_response
from gui_jax.core.labels import label_to_element
from gui_jax.core.types import Action, Episode, Observation
from gui_jax.models.heads import label_scores
from gui_jax.rewards.data_engine import RewardRecord, StepRef
from gui_jax.rewards.names import RM_SCORERS
from gui_jax.rl.batch import TrainSample, build_batch, model_forward_logprobs
from gui_jax.rl.prompting import (PromptConfig, expert_response, observation_content, visible_elements,
                                  word_spaced)
from gui_jax.rl.semi_online_rollout import expert_element

SCORERS = RM_SCORERS
QUESTION = "Is the candidate action correct for the goal? Answer yes or no."
RATIONALE_SUFFIX = "\nVerdict:"


@dataclasses.dataclass(frozen=True)
class RewardModelConfig:
    label_pos: str = " yes"          # text of the positive label token (must encode to one id)
    label_neg: str = " no"
    history_images: int = 5          # last steps shown with their observation (UI-Genie: 5 screenshots)
    max_text_history: int = 20       # older steps kept as text lines (≤ 0 = all)
    rationale: bool = False          # a rationale precedes the label (GUI-Shepherd CoT variant)
    rationale_max_tokens: int = 64   # greedy rationale length when scoring with rationale=True
    system_prompt: bool = True
    # Point actions (candidate and earlier steps) carry their target's label, "→ <label>", as an action
    # description would; without it the RM has to look the element index up among the UI lines.
    describe_targets: bool = False
    batch_size: int = 16             # rows per scoring batch
    max_prompt_tokens: int = 8192
    # verdict: P(label_pos) after the judge prompt above (UI-Genie / GUI-Shepherd); policy_likelihood: the model
    # as a policy, P(candidate | the agent's own prompt) (gui_jax/rewards/likelihood.py), trained by likelihood
    # on positives and unlikelihood on negatives
    scorer: str = "verdict"
    # policy_likelihood only: a record scores the lowest of its own P(candidate) and P(step | its history) of
    # every earlier step, so a step after a wrong one (or a trajectory holding one) scores as low as that step;
    # scoring only (evaluation, hard-negative mining): the training loss stays per record
    history_min: bool = False
    # history_min only: an earlier step lowers the score only when its P(step | history) < history_gate (1.0:
    # every earlier step; lower: only steps the policy holds confidently wrong, so a right but unlikely step
    # of a positive trajectory does not sink it)
    history_gate: float = 1.0

    def __post_init__(self):
        if self.scorer not in SCORERS:
            raise ValueError(f"unknown reward-model scorer {self.scorer!r}; known: {', '.join(SCORERS)}")
        if self.history_min and self.scorer != "policy_likelihood":
            raise ValueError("history_min scores earlier steps by the policy's likelihood: it needs "
                             "scorer='policy_likelihood'")
        if not 0.0 < self.history_gate <= 1.0:
            raise ValueError(f"history_gate must be in (0, 1], got {self.history_gate}")
        if self.history_gate < 1.0 and not self.history_min:
            raise ValueError(f"history_gate={self.history_gate} gates the prefix minimum: it needs history_min=True")
        if self.history_images < 0:
            raise ValueError(f"history_images must be >= 0, got {self.history_images}")
        if self.label_pos == self.label_neg:
            raise ValueError(f"label_pos and label_neg must differ, both are {self.label_pos!r}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")


# ------------------------------------------------------------------------------------------ prompt
def _episode(episodes: Mapping[str, Episode], ref: StepRef) -> Episode:
    ep = episodes.get(ref.episode_id)
    if ep is None:
        raise KeyError(f"reward record refers to episode {ref.episode_id!r}, which is not in the lookup "
                       f"({len(episodes)} episodes)")
    if not 0 <= ref.step < len(ep.actions):
        raise ValueError(f"reward record step {ref.step} is out of range for episode {ref.episode_id!r} "
                         f"({len(ep.actions)} actions)")
    return ep


def step_observation(episodes: Mapping[str, Episode], ref: StepRef) -> Observation:
    """The screen before step `ref` (where its action is taken)."""
    return _episode(episodes, ref).observations[ref.step]


def after_observation(episodes: Mapping[str, Episode], ref: StepRef) -> Observation:
    """The screen after step `ref`: the next observation, or the last one an episode without a final screen has."""
    ep = _episode(episodes, ref)
    return ep.observations[min(ref.step + 1, len(ep.observations) - 1)]


def step_action(episodes: Mapping[str, Episode], ref: StepRef) -> Action:
    return ref.action if ref.action is not None else _episode(episodes, ref).actions[ref.step]


def _element_of(episodes, ref: StepRef, action: Action, obs: Observation) -> Optional[int]:
    """Element index naming a point action in element mode: the action's own, the expert's, or the smallest
    visible element holding the point."""
    action = label_to_element(action, obs.ui_elements)
    if action.element is not None:
        return action.element
    if ref.action is None:
        return expert_element(_episode(episodes, ref), ref.step)
    if action.x is None:
        return None
    inside = [e for e in visible_elements(obs)
              if e.bounds[0] <= action.x <= e.bounds[2] and e.bounds[1] <= action.y <= e.bounds[3]]
    if not inside:
        return None
    return min(inside, key=lambda e: (e.bounds[2] - e.bounds[0]) * (e.bounds[3] - e.bounds[1])).index


def action_text(episodes, ref: StepRef, action: Action, obs: Observation, pcfg: PromptConfig) -> str:
    """`action` (screen pixels) written in the policy's dialect for a prompt showing `obs`."""
    element = None
    if pcfg.target in ("element", "text") and action.type in ("click", "long_press"):
        element = _element_of(episodes, ref, action, obs)
        if element is None and (action.x is not None or action.text is not None):
            # a sampled point or label that names nothing on this screen (a candidate, or one a beam kept in its
            # history): written as the policy wrote it, which the element-mode policy finds all but impossible
            written = (Action(action.type, x=action.x, y=action.y) if action.x is not None
                       else Action(action.type, text=action.text))
            return format_response(written, pcfg.dialect, "")
        if element is None:
            raise ValueError(f"element-mode RM prompt: {action} at step {ref.step} of {ref.episode_id!r} names "
                             f"no UI element (give the candidate an element index)")
    return expert_response(action, obs, pcfg, element=element)


def target_caption(episodes, ref: StepRef, action: Action, obs: Observation, pcfg: PromptConfig) -> str:
    """The suffix " → <label>" naming the element a point action targets on `obs`; "" for other actions
    and for a point on no labelled element."""
    if action.type not in ("click", "long_press"):
        return ""
    element = _element_of(episodes, ref, action, obs)
    e = next((e for e in obs.ui_elements if e.index == element), None) if element is not None else None
    if e is None:
        return ""
    # description and text both ("08:30 Call mom ON"): the text alone is often just the widget's state
    label = " ".join(dict.fromkeys(" ".join(x.split()) for x in (e.content_desc, e.text) if x))
    if pcfg.word_tokens:
        label = word_spaced(label)
    return f" → {label}" if label else ""


def _old_line(episodes, ref: StepRef, pcfg: PromptConfig, rcfg: RewardModelConfig) -> str:
    a = step_action(episodes, ref)
    line = a.action_desc or str(a.replace(action_desc=None))
    if rcfg.describe_targets and not a.action_desc:
        line += target_caption(episodes, ref, a, step_observation(episodes, ref), pcfg)
    return line


def record_parts(record: RewardRecord, episodes: Mapping[str, Episode]):
    """(history refs, current observation, candidate ref, candidate action) of a record."""
    steps = tuple(record.steps)
    if record.kind == "step":
        cand_ref = steps[-1]
        history = steps[:-1]
        current = step_observation(episodes, cand_ref)
        candidate = step_action(episodes, cand_ref)
        return history, current, cand_ref, candidate
    history = steps
    if history and step_action(episodes, history[-1]).type == "terminate":
        history = history[:-1]
    if history:
        current = after_observation(episodes, history[-1])
        cand_ref = StepRef(history[-1].episode_id, history[-1].step, Action("terminate", status="success"))
    else:  # an empty trajectory claimed complete: the first screen of the scored step's episode
        if not steps:
            raise ValueError(f"outcome record for goal {record.goal!r} has no steps")
        current = step_observation(episodes, steps[0])
        cand_ref = StepRef(steps[0].episode_id, steps[0].step, Action("terminate", status="success"))
    return history, current, cand_ref, cand_ref.action


def rm_messages(record: RewardRecord, episodes: Mapping[str, Episode], pcfg: PromptConfig,
                rcfg: RewardModelConfig) -> tuple[list[dict], list[np.ndarray]]:
    """Chat messages (ending with the user turn) + the images they reference, in order."""
    history, current, cand_ref, candidate = record_parts(record, episodes)
    goal = word_spaced(record.goal) if pcfg.word_tokens else record.goal
    n_img = min(rcfg.history_images, len(history))
    old, recent = history[: len(history) - n_img], history[len(history) - n_img:]
    images: list[np.ndarray] = []
    intro = f"Goal: {goal}\n"
    if old:
        lines = [f"{i + 1}. {_old_line(episodes, r, pcfg, rcfg)}" for i, r in enumerate(old)]
        if rcfg.max_text_history > 0:
            lines = lines[-rcfg.max_text_history:]
        intro += "Earlier steps:\n" + "\n".join(lines) + "\n"
    content: list[dict] = [{"type": "text", "text": intro}]
    for k, ref in enumerate(recent):
        obs = step_observation(episodes, ref)
        content.append({"type": "text", "text": f"Step {len(old) + k + 1}:"})
        content += observation_content(obs, pcfg, images, history=True)
        a = step_action(episodes, ref)
        desc = target_caption(episodes, ref, a, obs, pcfg) if rcfg.describe_targets else ""
        content.append({"type": "text", "text": "\nAction: " + action_text(episodes, ref, a, obs, pcfg) + desc + "\n"})
    content.append({"type": "text", "text": "Current screen:"})
    content += observation_content(current, pcfg, images, history=False)
    desc = target_caption(episodes, cand_ref, candidate, current, pcfg) if rcfg.describe_targets else ""
    tail = "\nCandidate action: " + action_text(episodes, cand_ref, candidate, current, pcfg) + desc + "\n"
    if pcfg.goal_last:
        tail += f"Goal: {goal}\n"
    content.append({"type": "text", "text": tail + QUESTION})
    messages = []
    if rcfg.system_prompt:
        messages.append({"role": "system", "content": "You judge actions of an agent operating an Android phone."})
    messages.append({"role": "user", "content": content})
    return messages, images


# ------------------------------------------------------------------------------------------ tokens
def label_ids(tokenizer, rcfg: RewardModelConfig) -> tuple[int, int]:
    """(pos_id, neg_id); each label text must be exactly one token of this tokenizer."""
    out = []
    for name in ("label_pos", "label_neg"):
        ids = tokenizer.encode(getattr(rcfg, name))
        if len(ids) != 1:
            raise ValueError(f"RewardModelConfig.{name} = {getattr(rcfg, name)!r} encodes to {len(ids)} tokens "
                             f"{ids}; pick a word that is one token of this vocabulary")
        out.append(int(ids[0]))
    return out[0], out[1]


def rm_sample(agent, record: RewardRecord, episodes: Mapping[str, Episode], pcfg: PromptConfig,
              rcfg: RewardModelConfig, *, rationale: str = "", weight: float = 1.0) -> TrainSample:
    """The record as a TrainSample: prompt (+ rationale + "\nVerdict:") → response = the one label token.

    `weight` rides in `advantage` (the loss weight of the label token: class balancing)."""
    pos_id, neg_id = label_ids(agent.tokenizer, rcfg)
    messages, images = rm_messages(record, episodes, pcfg, rcfg)
    inputs = agent.policy.prompt_inputs((messages, images))
    prompt = np.asarray(inputs["input_ids"], np.int32)
    if rcfg.rationale:
        extra = agent.tokenizer.encode(rationale.strip() + RATIONALE_SUFFIX)
        prompt = np.concatenate([prompt, np.asarray(extra, np.int32)])
    if prompt.size > rcfg.max_prompt_tokens:
        raise ValueError(f"RM prompt of the {record.kind} record for {record.goal!r} has {prompt.size} tokens > "
                         f"max_prompt_tokens {rcfg.max_prompt_tokens}; lower history_images")
    has_img = len(images) > 0
    return TrainSample(prompt, np.asarray([pos_id if record.label else neg_id], np.int32), advantage=float(weight),
                       pixel_values=inputs["pixel_values"] if has_img else None,
                       image_grid_thw=inputs["image_grid_thw"] if has_img else None)


def label_logits(model, batch: dict) -> jax.Array:
    """[B, V] logits predicting each row's first response token (the label) of a `build_batch` batch."""
    _, logits = model_forward_logprobs(model, batch)
    return logits[:, 0]


# ------------------------------------------------------------------------------------------ scorer
@partial(jax.jit, static_argnums=(0, 1, 2))
def _p_pos(graphdef, pos_id: int, neg_id: int, params, rest, batch) -> jax.Array:
    """[B] P(+) of a `build_batch` batch of RM samples (shared by scorers of the same model structure)."""
    model = nnx.merge(graphdef, params, rest)
    return label_scores(label_logits(model, batch), pos_id, neg_id)["p_pos"]


class RewardScorer:
    """P(+) of reward records under `agent`'s current params.

    score(records) -> float64 [N]. The label token in each sample is a placeholder: only the logits at its
    position are read. With `rcfg.rationale`, a greedy rationale is generated first (or given by
    `rationale_fn(record) -> str`)."""

    def __init__(self, agent, episodes: Mapping[str, Episode], pcfg: PromptConfig,
                 rcfg: RewardModelConfig = RewardModelConfig(), *,
                 rationale_fn: Optional[Callable[[RewardRecord], str]] = None):
        self.agent, self.episodes, self.pcfg, self.rcfg = agent, episodes, pcfg, rcfg
        self.pos_id, self.neg_id = label_ids(agent.tokenizer, rcfg)
        self.rationale_fn = rationale_fn

    def _rationales(self, records: Sequence[RewardRecord]) -> list[str]:
        if not self.rcfg.rationale:
            return [""] * len(records)
        if self.rationale_fn is not None:
            return [self.rationale_fn(r) for r in records]
        prompts = [rm_messages(r, self.episodes, self.pcfg, self.rcfg) for r in records]
        gens = self.agent.policy.generate(prompts, temperature=0.0, seed=0,
                                          max_new_tokens=self.rcfg.rationale_max_tokens)
        return [g.text.split(RATIONALE_SUFFIX.strip())[0] for g in gens]

    def samples(self, records: Sequence[RewardRecord]) -> list[TrainSample]:
        rats = self._rationales(records)
        return [rm_sample(self.agent, r, self.episodes, self.pcfg, self.rcfg, rationale=t)
                for r, t in zip(records, rats)]

    def score_samples(self, samples: Sequence[TrainSample], batch_size: Optional[int] = None) -> np.ndarray:
        bs = batch_size or self.rcfg.batch_size
        order = sorted(range(len(samples)), key=lambda i: (len(samples[i]), i))
        out = np.zeros(len(samples), np.float64)
        for start in range(0, len(order), bs):
            idx = order[start:start + bs]
            batch = build_batch([samples[i] for i in idx], self.agent.model_config,
                                pad_id=self.agent.tokenizer.pad_id, rows=bs)
            p = _p_pos(self.agent.graphdef, self.pos_id, self.neg_id, self.agent.params, self.agent.rest, batch)
            p = np.asarray(jax.device_get(p), np.float64)
            out[idx] = p[: len(idx)]
        return out

    def score(self, records: Sequence[RewardRecord], batch_size: Optional[int] = None) -> np.ndarray:
        """P(+) per record, float64 [N] (batches of `batch_size`, default rcfg.batch_size)."""
        records = list(records)
        if not records:
            return np.zeros(0, np.float64)
        return self.score_samples(self.samples(records), batch_size)
