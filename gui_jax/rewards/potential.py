"""Potential step labels on PhoneSim (Math-Shepherd; UI-Genie §3.2): failed trajectories and the continuation
rollouts that label their steps.

Step t of a failed trajectory is positive iff at least one of k continuation rollouts, each on a fresh instance
of the task after replaying steps 0..t, passes PhoneSim's success check (`data_engine.potential_labels`; the
records: `data_engine.potential_records`).

The rollout policy is a *slipping expert*, our stand-in for the papers' agent (a rollout of the model would
cost a sampler call per step): with probability `slip` it takes a random action (Back one time in four, else a
tap on a visible clickable element); otherwise the expert's next step, found by matching the current screen
(app and UI elements) with the expert episode's screens: the first match from the policy's progress on (the
longest prefix of the history that equals the expert's actions, or one past the expert step the last action
repeated, so an `answer`, which leaves the screen as it was, is not repeated), else the nearest match before
it. With no matching screen the policy is lost and acts at random until a Back or a tap brings a known screen
back. A wrong tap that opens another page can be undone, a wrong toggle or deletion mostly cannot: the
continuations measure which.

Failed trajectories are the slipping expert's own failed rollouts from the start. Every recorded step carries its
description (`action_desc`, envs/sim/describe.py), as expert steps do.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from gui_jax.core.types import Action, Episode, Observation
from gui_jax.envs.sim import PhoneSim, make_task
from gui_jax.envs.sim.describe import described, hit_element
from gui_jax.rl.prompting import visible_elements

# policy(obs, goal, rng, history) -> the next action; history = the actions executed so far in this episode
Policy = Callable[[Observation, str, np.random.Generator, tuple], Action]
BACK = Action("system_button", button="Back")


def horizon(ep: Episode) -> int:
    """Step budget of a failed rollout and of each continuation: twice the expert's steps (at least 4)."""
    return max(4, 2 * len(ep.actions))


def task_of(ep: Episode):
    """The PhoneSim task an oracle episode was generated from (its template and instance seed)."""
    seed = ep.info.get("seed")
    if not ep.template or seed is None:
        raise ValueError(f"episode {ep.episode_id!r} names no PhoneSim task (template {ep.template!r}, "
                         f"info.seed {seed!r}); potential labels need PhoneSim oracle episodes")
    return make_task(ep.template, int(seed))


def screen_key(obs: Observation) -> tuple:
    """What identifies a screen for the slipping expert: the app and every element's class, labels, state, bounds."""
    return (obs.current_app, tuple((e.cls, e.text, e.content_desc, e.checked, tuple(e.bounds))
                                   for e in obs.ui_elements))


def random_action(obs: Observation, rng: np.random.Generator) -> Action:
    taps = [e for e in visible_elements(obs) if e.clickable and e.enabled]
    if not taps or rng.random() < 0.25:
        return BACK
    e = taps[int(rng.integers(len(taps)))]
    return Action("click", x=e.center[0], y=e.center[1], element=e.index)


def _same(a: Action, b: Action) -> bool:
    return a.replace(action_desc=None) == b.replace(action_desc=None)


def slipping_expert(ep: Episode, slip: float) -> Policy:
    """The expert of `ep` that slips with probability `slip` per step (module docstring)."""
    expert = list(ep.actions)
    keys = [screen_key(o) for o in ep.observations[: len(expert)]]

    def policy(obs, goal, rng, history):
        if rng.random() < slip:
            return random_action(obs, rng)
        progress = 0
        while progress < min(len(history), len(expert)) and _same(history[progress], expert[progress]):
            progress += 1
        if history and progress < len(history):            # off the expert's path: after the step it last repeated
            repeated = [p for p in range(progress, len(expert)) if _same(history[-1], expert[p])]
            progress = repeated[0] + 1 if repeated else progress
        key = screen_key(obs)
        # the first expert screen like this one from the progress on, else the nearest before it (a Back to a
        # screen the expert passed: the steps from there are redone; a screen an action changed looks different)
        for p in list(range(progress, len(expert))) + list(range(min(progress, len(expert)) - 1, -1, -1)):
            if keys[p] == key:
                return expert[p]
        return random_action(obs, rng)
    return policy


def target_box(action: Action, obs: Observation) -> Optional[tuple]:
    """Bounds of the element a point action reaches on `obs` (an episode's target box: element-mode prompts
    name a step's element by it), None for other actions or a point on nothing."""
    if action.type not in ("click", "long_press") or action.x is None:
        return None
    e = hit_element(obs.ui_elements, action.x, action.y, long=action.type == "long_press")
    return None if e is None else tuple(float(v) for v in e.bounds)


@dataclass
class Rollout:
    success: bool
    observations: list = field(default_factory=list)   # recorded: the screen before each action, then the last one
    actions: list = field(default_factory=list)        # recorded: every action (prefix too) with its description
    boxes: list = field(default_factory=list)          # recorded: each action's target box (target_box)


def phonesim_rollout(task, policy_fn: Policy, rng: np.random.Generator, *, prefix: Sequence[Action] = (),
                     max_steps: int = 15, record: bool = False, render: bool = False,
                     resolution: tuple = (540, 1200)) -> Rollout:
    """Replays `prefix` on a fresh instance of `task`, then lets `policy_fn` act for up to `max_steps` more steps
    until the episode ends; success = PhoneSim's exact check. `record` keeps observations and described actions."""
    sim = PhoneSim(render=render, resolution=tuple(resolution), max_steps=len(prefix) + max_steps)
    obs = sim.reset(task)
    out = Rollout(False)
    history: list[Action] = []
    queue = list(prefix)
    while True:
        a = queue.pop(0) if queue else policy_fn(obs, task.goal, rng, tuple(history))
        if record:
            out.observations.append(obs.materialize())
            out.actions.append(described(a, out.observations[-1]))
            out.boxes.append(target_box(a, out.observations[-1]))
        history.append(a)
        obs, done, info = sim.step(a)
        if done:
            if record:
                out.observations.append(obs.materialize())
            out.success = bool(info.get("success"))
            return out


def phonesim_continuation(task, prefix: Sequence[Action], policy_fn: Policy, *, max_steps: int = 15,
                          seed: int = 0) -> Callable[[int, int], bool]:
    """continuation_succeeds(t, i) for `data_engine.potential_labels`: rollout i after replaying prefix[:t+1]
    (an episode the prefix already ends counts as it ended)."""
    def run(t: int, i: int) -> bool:
        rng = np.random.default_rng([seed, t, i])
        return phonesim_rollout(task, policy_fn, rng, prefix=prefix[: t + 1], max_steps=max_steps).success
    return run


class PhoneSimPotential:
    """The reward_model job's source of failed trajectories and continuation outcomes (tests pass stubs with the
    same two methods)."""

    def __init__(self, slip: float, attempts: int, render: bool = False, resolution: tuple = (540, 1200)):
        self.slip, self.attempts, self.render, self.resolution = slip, attempts, render, tuple(resolution)

    def failed_trajectory(self, ep: Episode, seed: int) -> Optional[Episode]:
        """The first of `attempts` slipping-expert rollouts of `ep`'s task that fails, as an episode; None if all
        succeed."""
        task, policy = task_of(ep), slipping_expert(ep, self.slip)
        for attempt in range(self.attempts):
            r = phonesim_rollout(task, policy, np.random.default_rng([seed, attempt]), max_steps=horizon(ep),
                                 record=True, render=self.render, resolution=self.resolution)
            if not r.success:
                n = len(r.actions)
                return Episode(episode_id=f"{ep.episode_id}/failed{attempt}", goal=ep.goal,
                               observations=r.observations, actions=r.actions, target_bboxes=r.boxes,
                               step_instructions=[""] * n, app=ep.app, template=ep.template,
                               difficulty=ep.difficulty,
                               info={**ep.info, "success": False, "source": "phonesim-slipping-expert",
                                     "expert_episode": str(ep.episode_id), "slip": self.slip, "seed_of_rollout": seed})
        return None

    def continuation(self, expert: Episode, failed: Episode, seed: int) -> Callable[[int, int], bool]:
        return phonesim_continuation(task_of(expert), failed.actions, slipping_expert(expert, self.slip),
                                     max_steps=horizon(expert), seed=seed)
