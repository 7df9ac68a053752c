"""Semi-online rollouts over offline expert episodes with the Patch Module (docs/algorithms.md §3, UI-S1 Alg. 1).

For each episode, N rollouts run in lock-step (batched sampling across all live rollouts).
At step t the policy answers from its own history; a matching action continues on the expert's
next screen; a mismatch is patched (response replaced in the history by F(a*, T)) while patches
used c < ε, else the rollout stops. Every sampled step (the mismatched one included) is kept with
its rule reward and becomes a training step.

Patch thoughts (UI-S1 Table 1): thought_free → (a*, ∅); off_policy → (a*, M0(I, a*, S_t)), the thought
written by an auxiliary model (any `Policy`, passed as `aux_policy`) shown the goal, the expert
action as a hint and the screen, no history; on_policy → (a*, M(I, a*, H_t, S_t)), the policy itself
prompted with the hint on top of the rollout's own history H_t.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Optional, Sequence

from gui_jax.core.dialects import ActionParseError, parse_response, scale_action_to_screen
from gui_jax.core.labels import label_to_element
from gui_jax.core.types import Episode, Observation
from gui_jax.rewards.names import TEXT_MATCH_RULES
from gui_jax.rewards.rules import dialect_requires_thought, judge_response
from gui_jax.rl.policy import Generation, Policy
from gui_jax.rl.prompting import PromptConfig, build_messages, expert_response, model_image_size
from gui_jax.rl.names import PATCH_STRATEGIES  # noqa: F401 - re-exported (import-light names)


@dataclasses.dataclass(frozen=True)
class SemiOnlineConfig:
    num_rollouts: int = 4                 # N
    patch_strategy: str = "thought_free"
    patch_threshold: int = 1              # ε; -1 = unlimited
    temperature: float = 1.0
    reward_preset: str = "paper"
    require_thought: Optional[bool] = None  # None: as the dialect (a thought field → required)
    bbox_scale: float = 1.2               # matcher: expert bbox enlarged about its centre
    dist_threshold: float = 0.04          # matcher: normalised L2 radius around the expert point
    text_match: str = "substring"         # matcher: text actions (core/matcher.py text_match)

    def __post_init__(self):
        if self.patch_strategy not in PATCH_STRATEGIES:
            raise ValueError(f"unknown patch strategy {self.patch_strategy!r}; known: {PATCH_STRATEGIES}")
        if self.text_match not in TEXT_MATCH_RULES:
            raise ValueError(f"unknown text-match rule {self.text_match!r}; known: {TEXT_MATCH_RULES}")


@dataclasses.dataclass
class RolloutStep:
    episode_index: int
    rollout: int                # 0..N-1 within the episode's group
    step: int
    generation: Generation
    reward: float
    type_match: bool
    exact_match: bool
    mismatch: bool
    patched: bool


def judge_step(text: str, ep: Episode, t: int, pcfg: PromptConfig, scfg: SemiOnlineConfig):
    """Rule reward of a response at step t of an expert episode.

    The response's coordinates are pixels of the model image (`model_image_size`); they are mapped
    to screen pixels, where the expert action and bbox live, before matching.
    """
    obs = ep.observations[t]
    image_size = model_image_size(obs, pcfg)
    require = dialect_requires_thought(pcfg.dialect) if scfg.require_thought is None else scfg.require_thought
    return judge_response(text, pcfg.dialect, ep.actions[t], image_size=obs.screen_size,
                          expert_bbox=ep.target_bboxes[t], preset=scfg.reward_preset,
                          require_thought=require, bbox_scale=scfg.bbox_scale,
                          dist_threshold=scfg.dist_threshold, elements=element_table(obs), text_rule=scfg.text_match,
                          ui=obs.ui_elements,
                          pred_transform=lambda a: scale_action_to_screen(label_to_element(a, obs.ui_elements),
                                                                          image_size, obs.screen_size))


def candidate_action(text: str, ep: Episode, t: int, pcfg: PromptConfig):
    """The action a response names at step t of an expert episode, in the expert's frame (screen pixels; a click
    by label as the element it names), as judge_step matches it; None when the response does not parse."""
    obs = ep.observations[t]
    try:
        _, action = parse_response(text, pcfg.dialect)
    except ActionParseError:
        return None
    return scale_action_to_screen(label_to_element(action, obs.ui_elements), model_image_size(obs, pcfg),
                                  obs.screen_size)


def element_table(obs: Observation) -> list:
    """index -> bounds table for element-index actions (indices may be sparse)."""
    if not obs.ui_elements:
        return []
    table = [(0.0, 0.0, 0.0, 0.0)] * (max(e.index for e in obs.ui_elements) + 1)
    for e in obs.ui_elements:
        table[e.index] = e.bounds
    return table


def expert_element(ep: Episode, t: int) -> Optional[int]:
    """The expert's element index at step t, as an element-index agent should name it.

    Prefers an element that carries text inside the target box (a list row's label rather than
    its text-less container: the tap lands on the same widget, and the model can read the label
    it names); falls back to the element with exactly the target bounds.
    """
    a = ep.actions[t]
    if a.element is not None:
        return a.element
    bbox = ep.target_bboxes[t]
    if bbox is None:
        return None
    x1, y1, x2, y2 = (float(v) for v in bbox)
    exact = None
    for e in ep.observations[t].ui_elements:
        if tuple(float(v) for v in e.bounds) == (x1, y1, x2, y2):
            if e.text or e.content_desc:
                return e.index
            exact = e.index if exact is None else exact
    for e in ep.observations[t].ui_elements:
        cx, cy = e.center
        if (e.text or e.content_desc) and x1 <= cx <= x2 and y1 <= cy <= y2:
            return e.index
    return exact


def semi_online_rollouts(policy: Policy, episodes: Sequence[Episode], pcfg: PromptConfig,
                         scfg: SemiOnlineConfig, *, seed: int,
                         aux_policy: Optional[Policy] = None) -> list[RolloutStep]:
    """Runs N semi-online rollouts per episode; returns every sampled step.

    aux_policy: the auxiliary model M0 of off-policy thought patches (required for that strategy)."""
    if scfg.patch_strategy == "off_policy" and aux_policy is None:
        raise ValueError("patch_strategy 'off_policy' takes its thoughts from an auxiliary model: pass "
                         "aux_policy (e.g. an Agent's policy built from rl.patch_aux_checkpoint)")
    n = scfg.num_rollouts
    # live state per (episode, rollout): history [(obs, response)], patches used, alive
    histories = {(e, i): [] for e in range(len(episodes)) for i in range(n)}
    patches = {k: 0 for k in histories}
    alive = set(histories)
    out: list[RolloutStep] = []
    t = 0
    while alive:
        keys = sorted(k for k in alive if t < len(episodes[k[0]].actions))
        alive = set(keys)
        if not keys:
            break
        prompts = []
        for (e, i) in keys:
            ep = episodes[e]
            prompts.append(build_messages(ep.goal, histories[(e, i)], ep.observations[t], pcfg))
        gens = policy.generate(prompts, temperature=scfg.temperature, seed=seed * 100003 + t)
        need_hint = []
        for (key, prompt, gen) in zip(keys, prompts, gens):
            e, i = key
            ep = episodes[e]
            j = judge_step(gen.text, ep, t, pcfg, scfg)
            matched = j.exact_match
            eps = scfg.patch_threshold
            can_patch = eps < 0 or patches[key] < eps
            step = RolloutStep(e, i, t, gen, j.reward, j.type_match, j.exact_match,
                               mismatch=not matched, patched=False)
            out.append(step)
            if matched:
                histories[key].append((ep.observations[t], gen.text))
            elif can_patch:
                patches[key] += 1
                step.patched = True
                need_hint.append((key, step))
            else:
                alive.discard(key)
        if need_hint:
            thoughts = _patch_thoughts(policy, aux_policy, episodes, histories, need_hint, t, pcfg, scfg, seed)
            for (key, _), thought in zip(need_hint, thoughts):
                ep = episodes[key[0]]
                patched = expert_response(ep.actions[t], ep.observations[t], pcfg, thought=thought,
                                          element=expert_element(ep, t))
                histories[key].append((ep.observations[t], patched))
        t += 1
    return out


HINT_TEXT = ("Hint: the correct next action is {hint}. Write your reasoning for taking it as if you had "
             "found it yourself (do not mention the hint), then give the action.")


def hint_prompt(goal: str, hint: str, history, obs: Observation, pcfg: PromptConfig):
    """The thought-patch prompt: the step prompt with the expert action as a hint after the goal
    (history = the rollout's own H_t for on-policy patches, [] for the auxiliary model)."""
    return build_messages(f"{goal}\n" + HINT_TEXT.format(hint=hint), history, obs, pcfg)


_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)


def thought_of(text: str, dialect: str) -> str:
    """The thought of a generated patch response: the dialect's thought if it parses, else the
    first <think>…</think> body (an auxiliary model may answer with the thought alone), else ''."""
    try:
        return parse_response(text, dialect)[0]
    except ActionParseError:
        m = _THINK.search(text)
        return m.group(1).strip() if m else ""


def _patch_thoughts(policy, aux_policy, episodes, histories, items, t, pcfg, scfg, seed) -> list[str]:
    if scfg.patch_strategy == "thought_free":
        return [""] * len(items)
    on_policy = scfg.patch_strategy == "on_policy"
    prompts = []
    for (e, i), _ in items:
        ep = episodes[e]
        hint = expert_response(ep.actions[t], ep.observations[t], pcfg, element=expert_element(ep, t))
        # H_t: the history this rollout step was sampled from (the patch is not appended yet).
        prompts.append(hint_prompt(ep.goal, hint, histories[(e, i)] if on_policy else [], ep.observations[t], pcfg))
    writer = policy if on_policy else aux_policy
    gens = writer.generate(prompts, temperature=scfg.temperature, seed=seed * 7919 + t)
    return [thought_of(g.text, pcfg.dialect) for g in gens]
