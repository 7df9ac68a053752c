"""Semi-online rollouts over offline expert episodes with the Patch Module (SPEC §3, UI-S1 Alg. 1).

For each episode, N rollouts run in lock-step (batched sampling across all live rollouts).
At step t the policy answers from its own history; a matching action continues on the expert's
next screen; a mismatch is patched (response replaced in the history by F(a*, T)) while patches
used c < ε, else the rollout stops. Every sampled step (the mismatched one included) is kept with
its rule reward and becomes a training step.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence


from gui_jax.core.dialects import scale_action_to_screen
from gui_jax.core.dialects import ActionParseError, parse_response
from gui_jax.core.types import Action, Episode, Observation
from gui_jax.rewards.rules import judge_response
from gui_jax.rl.policy import Generation, Policy
from gui_jax.rl.prompting import PromptConfig, build_messages, expert_response

PATCH_STRATEGIES = ("thought_free", "off_policy", "on_policy")


@dataclasses.dataclass(frozen=True)
class SemiOnlineConfig:
    num_rollouts: int = 4                 # N
    patch_strategy: str = "thought_free"
    patch_threshold: int = 1              # ε; -1 = unlimited
    temperature: float = 1.0
    reward_preset: str = "paper"
    require_thought: bool = False         # thought-free responses count as well-formed
    bbox_scale: float = 1.2
    dist_threshold: float = 0.04

    def __post_init__(self):
        if self.patch_strategy not in PATCH_STRATEGIES:
            raise ValueError(f"unknown patch strategy {self.patch_strategy!r}; known: {PATCH_STRATEGIES}")


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


# off-policy thought source: (goal, expert action, observation, step instruction) -> thought
ThoughtFn = Callable[[str, Action, Observation, str], str]


def instruction_thought(goal: str, action: Action, obs: Observation, instruction: str) -> str:
    """Default auxiliary 'model' for off-policy patches: the episode's step instruction."""
    return instruction or f"I should {action.type} next."


def _image_size(obs: Observation) -> tuple[int, int]:
    return (obs.screenshot.shape[1], obs.screenshot.shape[0])


def judge_step(text: str, ep: Episode, t: int, pcfg: PromptConfig, scfg: SemiOnlineConfig):
    """Rule reward of a response at step t of an expert episode.

    The response's coordinates are pixels of the model image (the screenshot as rendered); they
    are mapped to screen pixels, where the expert action and bbox live, before matching.
    """
    obs = ep.observations[t]
    image_size = _image_size(obs)
    return judge_response(text, pcfg.dialect, ep.actions[t], image_size=obs.screen_size,
                          expert_bbox=ep.target_bboxes[t], preset=scfg.reward_preset,
                          require_thought=scfg.require_thought, bbox_scale=scfg.bbox_scale,
                          dist_threshold=scfg.dist_threshold, elements=element_table(obs),
                          pred_transform=lambda a: scale_action_to_screen(a, image_size, obs.screen_size))


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
                         thought_fn: ThoughtFn = instruction_thought) -> list[RolloutStep]:
    """Runs N semi-online rollouts per episode; returns every sampled step."""
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
            thoughts = _patch_thoughts(policy, episodes, need_hint, t, pcfg, scfg, seed, thought_fn)
            for (key, _), thought in zip(need_hint, thoughts):
                ep = episodes[key[0]]
                patched = expert_response(ep.actions[t], ep.observations[t], pcfg, thought=thought,
                                          element=expert_element(ep, t))
                histories[key].append((ep.observations[t], patched))
        t += 1
    return out


def _patch_thoughts(policy, episodes, items, t, pcfg, scfg, seed, thought_fn) -> list[str]:
    if scfg.patch_strategy == "thought_free":
        return [""] * len(items)
    if scfg.patch_strategy == "off_policy":
        out = []
        for (e, _), _ in items:
            ep = episodes[e]
            out.append(thought_fn(ep.goal, ep.actions[t], ep.observations[t], ep.step_instructions[t]))
        return out
    # on_policy: the policy itself, prompted with the expert action as a hint, writes the thought.
    prompts = []
    for (e, i), _ in items:
        ep = episodes[e]
        hint = expert_response(ep.actions[t], ep.observations[t], pcfg, element=expert_element(ep, t))
        goal = f"{ep.goal}\nHint: the correct next action is {hint}. Explain why, then act."
        prompts.append(build_messages(goal, [], ep.observations[t], pcfg))
    gens = policy.generate(prompts, temperature=scfg.temperature, seed=seed * 7919 + t)
    thoughts = []
    for g in gens:
        try:
            thoughts.append(parse_response(g.text, pcfg.dialect)[0])
        except ActionParseError:
            thoughts.append("")
    return thoughts
