"""AdaGRPO host-side machinery (docs/algorithms.md §7, MobileRL) and the AWG difficulty curriculum.

The math of SPA lives in `advantages.spa`; this file holds the stateful, host-side parts:
- `AdaPRBuffer`: replay of hard successful trajectories (A ≥ τ_adv), at most a fraction λ per batch.
- `prune_negatives`: keep positive:negative ≤ 1:max_neg_per_pos by dropping lowest-advantage negatives.
- `FailureCurriculum` (FCF): cooldown and removal of tasks that keep failing; persists in checkpoints.
- `Curriculum`: re-exported from gui_jax.tasks.curriculum (easy → easy+medium → all).
All state is plain Python (lists, dicts, numbers) so `state_dict()` goes into a JSON/msgpack checkpoint.
"""
from __future__ import annotations

import math
from typing import Any, Hashable, Iterable, Mapping, Optional, Sequence

import numpy as np

# The difficulty curriculum has one implementation (advancing at most one stage per evaluation).
from gui_jax.tasks.curriculum import Curriculum  # noqa: F401  (re-exported)


# --------------------------------------------------------------------------- AdaPR
class AdaPRBuffer:
    """Replay buffer of high-advantage trajectories, keyed by task.

    insert(): after an iteration, offer (item, advantage, task); items with advantage ≥ tau_adv are
    stored; when over capacity the lowest-advantage entries are evicted (ties: oldest first).
    sample(batch_size): up to floor(max_fraction·batch_size) entries, highest advantage first; with
    pop_on_sample they leave the buffer (each replayed about once, as MobileRL intends).
    max_per_task (optional) caps entries of one task (keeps that task's highest advantages).
    Items are opaque; they must be serialisable by the checkpointer for state_dict to be saved.
    """

    def __init__(self, capacity: int = 256, tau_adv: float = 1.0, max_fraction: float = 0.25,
                 pop_on_sample: bool = True, max_per_task: Optional[int] = None):
        if capacity < 1:
            raise ValueError(f"AdaPRBuffer capacity must be ≥ 1, got {capacity}")
        if not 0.0 <= max_fraction <= 1.0:
            raise ValueError(f"AdaPRBuffer max_fraction must be in [0, 1], got {max_fraction}")
        self.capacity = capacity
        self.tau_adv = tau_adv
        self.max_fraction = max_fraction
        self.pop_on_sample = pop_on_sample
        self.max_per_task = max_per_task
        self._entries: list[dict[str, Any]] = []  # {'advantage', 'task', 'seq', 'item'}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._entries)

    def insert(self, items: Sequence[Any], advantages: Sequence[float], tasks: Sequence[Hashable]) -> int:
        """Offer trajectories; returns how many were stored (before eviction)."""
        if not (len(items) == len(advantages) == len(tasks)):
            raise ValueError(f"AdaPRBuffer.insert: items ({len(items)}), advantages ({len(advantages)}) and "
                             f"tasks ({len(tasks)}) must have the same length")
        added = 0
        for item, adv, task in zip(items, advantages, tasks):
            adv = float(adv)
            if adv >= self.tau_adv:
                self._entries.append({"advantage": adv, "task": task, "seq": self._seq, "item": item})
                self._seq += 1
                added += 1
        self._evict()
        return added

    def _evict(self) -> None:
        # Rank best first: higher advantage, then newer.
        ranked = sorted(self._entries, key=lambda e: (-e["advantage"], -e["seq"]))
        if self.max_per_task is not None:
            per_task: dict[Hashable, int] = {}
            kept = []
            for e in ranked:
                n = per_task.get(e["task"], 0)
                if n < self.max_per_task:
                    kept.append(e)
                    per_task[e["task"]] = n + 1
            ranked = kept
        self._entries = ranked[: self.capacity]

    def update_advantages(self, new_advantage: Mapping[Hashable, float]) -> None:
        """Set the current advantage of every entry of the given tasks (e.g. re-scored after an update)."""
        for e in self._entries:
            if e["task"] in new_advantage:
                e["advantage"] = float(new_advantage[e["task"]])
        self._evict()

    def num_to_sample(self, batch_size: int) -> int:
        return min(len(self._entries), int(math.floor(self.max_fraction * batch_size + 1e-9)))

    def sample(self, batch_size: int, exclude_tasks: Iterable[Hashable] = ()) -> list[tuple[Any, float, Hashable]]:
        """Up to floor(λ·batch_size) (item, advantage, task), highest advantage first."""
        exclude = set(exclude_tasks)
        n = self.num_to_sample(batch_size)
        ranked = sorted(self._entries, key=lambda e: (-e["advantage"], -e["seq"]))
        chosen = [e for e in ranked if e["task"] not in exclude][:n]
        if self.pop_on_sample:
            ids = {id(e) for e in chosen}
            self._entries = [e for e in self._entries if id(e) not in ids]
        return [(e["item"], e["advantage"], e["task"]) for e in chosen]

    def tasks(self) -> list[Hashable]:
        return [e["task"] for e in self._entries]

    def state_dict(self) -> dict[str, Any]:
        return {"entries": [dict(e) for e in self._entries], "seq": self._seq}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        try:
            self._entries = [dict(e) for e in state["entries"]]
            self._seq = int(state["seq"])
        except KeyError as err:
            raise KeyError(f"AdaPRBuffer state is missing field {err}") from None
        self._evict()


def prune_negatives(advantages: Sequence[float], rng: np.random.Generator, max_neg_per_pos: float = 2.0) -> np.ndarray:
    """Keep mask [N]: at most max_neg_per_pos negatives (A < 0) per positive (A > 0); A = 0 always kept.

    The negatives dropped are the lowest-advantage ones; ties (typical: all failures of a group share
    one advantage) are broken uniformly at random with `rng`. With no positives every negative is dropped.
    """
    adv = np.asarray(advantages, dtype=np.float64)
    keep = np.ones(adv.shape, bool)
    neg = np.nonzero(adv < 0)[0]
    n_keep = int(math.floor(max_neg_per_pos * int(np.sum(adv > 0)) + 1e-9))
    n_drop = len(neg) - n_keep
    if n_drop > 0:
        tie = rng.random(len(neg))
        order = np.lexsort((tie, adv[neg]))  # ascending advantage, random among ties
        keep[neg[order[:n_drop]]] = False
    return keep


# --------------------------------------------------------------------------- FCF
class FailureCurriculum:
    """Failure curriculum filtering (docs/algorithms.md §7).

    Call `record_epoch({task: rewards of its rollouts this epoch})` at the end of every epoch. A task
    whose rollouts are all 0 has its consecutive-failure count k incremented (tasks not sampled this
    epoch keep k); any non-zero reward resets k = 0 and ends its cooldown. When k ≥ fail_epochs the
    task enters (or restarts) a cooldown of `cooldown_epochs` epochs with sampling weight decay^k;
    k ≥ remove_after removes it for good. Weight is 1 outside cooldown.
    """

    def __init__(self, fail_epochs: int = 2, cooldown_epochs: int = 3, decay: float = 0.5, remove_after: int = 6):
        self.fail_epochs = fail_epochs
        self.cooldown_epochs = cooldown_epochs
        self.decay = decay
        self.remove_after = remove_after
        self.fail_count: dict[Hashable, int] = {}
        self.cooldown: dict[Hashable, int] = {}
        self.removed: set = set()
        self.epoch = 0

    def record_epoch(self, rewards_by_task: Mapping[Hashable, Sequence[float]]) -> None:
        for task in list(self.cooldown):  # one epoch has passed
            self.cooldown[task] -= 1
            if self.cooldown[task] <= 0:
                del self.cooldown[task]
        for task, rewards in rewards_by_task.items():
            if task in self.removed:
                continue
            rewards = np.asarray(rewards, dtype=np.float64)
            if rewards.size == 0:
                raise ValueError(f"FailureCurriculum.record_epoch: task {task!r} has no rollout rewards")
            if np.all(rewards == 0):
                k = self.fail_count.get(task, 0) + 1
                self.fail_count[task] = k
                if k >= self.remove_after:
                    self.removed.add(task)
                    self.cooldown.pop(task, None)
                elif k >= self.fail_epochs:
                    self.cooldown[task] = self.cooldown_epochs
            else:
                self.fail_count.pop(task, None)
                self.cooldown.pop(task, None)
        self.epoch += 1

    def weight(self, task: Hashable) -> float:
        if task in self.removed:
            return 0.0
        if task in self.cooldown:
            return self.decay ** self.fail_count.get(task, 0)
        return 1.0

    def weights(self, tasks: Sequence[Hashable]) -> np.ndarray:
        return np.array([self.weight(t) for t in tasks], dtype=np.float64)

    def active(self, tasks: Iterable[Hashable]) -> list[Hashable]:
        return [t for t in tasks if t not in self.removed]

    def sample(self, tasks: Sequence[Hashable], n: int, rng: np.random.Generator, replace: bool = False) -> list:
        """n tasks drawn with probability ∝ weight (without replacement unless `replace`)."""
        w = self.weights(tasks)
        if w.sum() <= 0:
            raise ValueError("FailureCurriculum.sample: every task has weight 0 (all removed)")
        nonzero = int(np.sum(w > 0))
        if not replace and n > nonzero:
            raise ValueError(f"FailureCurriculum.sample: asked {n} tasks without replacement, only {nonzero} active")
        idx = rng.choice(len(tasks), size=n, replace=replace, p=w / w.sum())
        return [tasks[i] for i in idx]

    def state_dict(self) -> dict[str, Any]:
        return {"fail_count": [[t, k] for t, k in self.fail_count.items()],
                "cooldown": [[t, c] for t, c in self.cooldown.items()],
                "removed": sorted(self.removed, key=repr), "epoch": self.epoch}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        try:
            self.fail_count = {_key(t): int(k) for t, k in state["fail_count"]}
            self.cooldown = {_key(t): int(c) for t, c in state["cooldown"]}
            self.removed = {_key(t) for t in state["removed"]}
            self.epoch = int(state["epoch"])
        except KeyError as err:
            raise KeyError(f"FailureCurriculum state is missing field {err}") from None


def _key(t):
    # JSON turns tuples into lists; task keys must stay hashable.
    return tuple(_key(x) for x in t) if isinstance(t, list) else t

