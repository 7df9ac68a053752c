"""Single-step view of offline episodes, for SFT and offline RL.

`StepDataset(source)` flattens episodes into (episode index, step index) pairs; item k is a
`StepRecord` holding the step's observation, expert action and history. Sources are an
`EpisodeStore` (only the needed screenshots are decoded) or any random-access sequence of
`Episode`s (e.g. a list).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from gui_jax.core.types import Action, Episode, Observation


@dataclass
class StepRecord:
    """Step `step_index` of episode `episode_index`: observations[t] precedes action[t].

    previous_actions: the expert actions of steps 0..t-1.
    history_screenshots: screenshots of steps max(0, t-history)..t-1, oldest first.
    """

    episode_index: int
    step_index: int
    episode_id: str
    goal: str
    num_steps: int
    observation: Observation
    action: Action
    target_bbox: Optional[tuple] = None
    step_instruction: str = ""
    previous_actions: tuple = ()
    history_screenshots: tuple = field(default_factory=tuple)

    @property
    def is_last(self) -> bool:
        return self.step_index == self.num_steps - 1


class StepDataset:
    """Random access over every step of every episode; grain-source compatible.

    history: number of earlier screenshots to attach (docs/algorithms.md §3 uses the last K = 2 screens,
    i.e. history=1 beside the current one).
    """

    def __init__(self, source: Sequence, *, history: int = 0):
        if history < 0:
            raise ValueError(f"history must be >= 0, got {history}")
        self.source = source
        self.history = history
        self._store_like = all(hasattr(source, m) for m in ("num_steps", "actions", "observation",
                                                             "step_fields", "meta"))
        if self._store_like:
            lengths = [source.num_steps(i) for i in range(len(source))]
        else:
            lengths = [len(source[i]) for i in range(len(source))]
        self._lengths = np.asarray(lengths, dtype=np.int64)
        # offsets[e] = index of the first step of episode e; offsets[-1] = total steps.
        self._offsets = np.concatenate([[0], np.cumsum(self._lengths)]).astype(np.int64)

    def __len__(self) -> int:
        return int(self._offsets[-1])

    def locate(self, index: int) -> tuple[int, int]:
        """(episode index, step index) of flat step `index`."""
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"step index {index} out of range for {n} steps")
        index %= n
        e = int(np.searchsorted(self._offsets, index, side="right") - 1)
        return e, int(index - self._offsets[e])

    def flat_index(self, episode_index: int, step_index: int) -> int:
        if not 0 <= step_index < self._lengths[episode_index]:
            raise IndexError(f"episode {episode_index} has {self._lengths[episode_index]} steps; "
                             f"asked for {step_index}")
        return int(self._offsets[episode_index] + step_index)

    def __getitem__(self, index: int) -> StepRecord:
        e, t = self.locate(int(index))
        first_hist = max(0, t - self.history)
        if self._store_like:
            src = self.source
            meta = src.meta(e)
            actions = src.actions(e)
            bbox, instruction = src.step_fields(e, t)
            obs = src.observation(e, t)
            hist = tuple(src.observation(e, s).screenshot for s in range(first_hist, t))
            episode_id, goal = meta.episode_id, meta.goal
        else:
            ep: Episode = self.source[e]
            actions = ep.actions
            bbox, instruction = ep.target_bboxes[t], ep.step_instructions[t]
            obs = ep.observations[t]
            hist = tuple(ep.observations[s].screenshot for s in range(first_hist, t))
            episode_id, goal = ep.episode_id, ep.goal
        return StepRecord(episode_index=e, step_index=t, episode_id=episode_id, goal=goal,
                          num_steps=int(self._lengths[e]), observation=obs, action=actions[t],
                          target_bbox=bbox, step_instruction=instruction,
                          previous_actions=tuple(actions[:t]), history_screenshots=hist)

    def __repr__(self) -> str:
        return f"StepDataset(episodes={len(self._lengths)}, steps={len(self)}, history={self.history})"
