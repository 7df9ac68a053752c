"""Host-side steps of the online trainers: group advantages (any registered estimator), AdaPR mixing with
negative pruning, FCF-weighted task sampling, and trajectories → training samples.

Everything here is plain numpy on small per-trajectory arrays so each step can be checked by hand
(tests/train/online/test_trainer.py feeds scripted trajectories through these and through the trainer).
"""
from __future__ import annotations

import base64
import dataclasses
from typing import Any, Callable, Optional, Sequence

import numpy as np

from gui_jax.rl.adagrpo import AdaPRBuffer, FailureCurriculum, prune_negatives
from gui_jax.rl.advantages import index_ids
from gui_jax.rl.batch import TrainSample


@dataclasses.dataclass
class Traj:
    """One finished trajectory as the trainer sees it: its task, outcome and trained steps."""
    task_id: str
    success: bool
    steps: list                      # StepRecord-like: .prompt_ids, .response_ids, .logprobs, .generation
    advantage: float = 0.0
    replayed: bool = False

    @property
    def length(self) -> int:
        return max(len(self.steps), 1)

    @property
    def reward(self) -> float:
        return 1.0 if self.success else 0.0


def group_advantages(trajs: Sequence[Traj], estimator: Callable, cfg) -> np.ndarray:
    """[N] float32 advantages of a `GROUP_ADVANTAGES` estimator over groups keyed by task id: it gets the
    0/1 outcomes [N], group ids [N], lengths [N] (e.g. trajectory GRPO, docs/algorithms.md §6; SPA, §7)."""
    if not trajs:
        return np.zeros((0,), np.float32)
    gid = index_ids([t.task_id for t in trajs])
    rewards = np.array([t.reward for t in trajs], np.float32)
    lengths = np.array([t.length for t in trajs], np.int32)
    return np.asarray(estimator(rewards, gid, lengths=lengths, cfg=cfg), np.float32)


@dataclasses.dataclass
class Selection:
    """What one update trains on, and why (counts for the iteration's metrics)."""
    trajs: list                      # fresh kept + replayed, each with .advantage set
    fresh: int
    pruned: int
    replayed: int
    inserted: int


def select_adagrpo(fresh: Sequence[Traj], buffer: Optional[AdaPRBuffer], rng: np.random.Generator, *,
                   nominal_batch: int, prune: bool, max_neg_per_pos: float = 2.0) -> Selection:
    """AdaGRPO's batch (docs/algorithms.md §7), advantages already set on `fresh`:
    1. prune negatives of the fresh trajectories to ≤ max_neg_per_pos per positive;
    2. replay ≤ floor(λ·nominal_batch) buffer entries (highest advantage first);
    3. offer the fresh trajectories to the buffer (A ≥ τ_adv stored; lowest evicted) for later iterations.
    """
    kept = list(fresh)
    pruned = 0
    if prune and kept:
        keep = prune_negatives([t.advantage for t in kept], rng, max_neg_per_pos)
        pruned = int((~keep).sum())
        kept = [t for t, k in zip(kept, keep) if k]
    replay, inserted = [], 0
    if buffer is not None:
        for item, adv, task in buffer.sample(nominal_batch):
            replay.append(Traj(task, True, decode_steps(item), float(adv), replayed=True))
        inserted = buffer.insert([encode_steps(t.steps) for t in fresh], [t.advantage for t in fresh],
                                 [t.task_id for t in fresh])
    return Selection(kept + replay, len(kept), pruned, len(replay), inserted)


def sample_tasks(tasks: Sequence[Any], n: int, rng: np.random.Generator,
                 fcf: Optional[FailureCurriculum] = None) -> list:
    """n distinct tasks (all of them when fewer), uniformly or with FCF weights (removed tasks never)."""
    tasks = list(tasks)
    if fcf is not None:
        w = fcf.weights([t.task_id for t in tasks])
        tasks = [t for t, x in zip(tasks, w) if x > 0]
        w = w[w > 0]
    else:
        w = np.ones(len(tasks))
    if not tasks:
        return []
    if len(tasks) <= n:
        return tasks
    idx = rng.choice(len(tasks), size=n, replace=False, p=w / w.sum())
    return [tasks[i] for i in sorted(idx)]


def step_samples(traj: Traj, advantage) -> list[TrainSample]:
    """TrainSamples of a trajectory's steps (empty responses skipped). `advantage`: a float for every
    step, or a per-step sequence (each item a float, or an array over the step's response tokens)."""
    out = []
    advs = advantage if isinstance(advantage, (list, tuple)) else [advantage] * len(traj.steps)
    for s, a in zip(traj.steps, advs):
        g = s.generation if hasattr(s, "generation") else s
        if np.asarray(g.response_ids).size == 0:
            continue
        a = np.asarray(a, np.float32) if np.ndim(a) else float(a)
        out.append(TrainSample(g.prompt_ids, g.response_ids, advantage=a, old_logprobs=g.logprobs,
                               pixel_values=g.pixel_values, image_grid_thw=g.image_grid_thw))
    return out


# ---------------------------------------------------------------------------------------- JSON-safe steps
def _enc(a) -> Optional[dict]:
    if a is None:
        return None
    a = np.ascontiguousarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode("ascii")}


def _dec(d) -> Optional[np.ndarray]:
    if d is None:
        return None
    return np.frombuffer(base64.b64decode(d["b64"]), dtype=np.dtype(d["dtype"])).reshape(d["shape"]).copy()


@dataclasses.dataclass
class StoredStep:
    """A replayed step: just what training needs (bit-exact round trip through the checkpoint's JSON)."""
    prompt_ids: np.ndarray
    response_ids: np.ndarray
    logprobs: np.ndarray
    pixel_values: Optional[np.ndarray] = None
    image_grid_thw: Optional[np.ndarray] = None


_FIELDS = ("prompt_ids", "response_ids", "logprobs", "pixel_values", "image_grid_thw")


def encode_steps(steps: Sequence) -> list[dict]:
    out = []
    for s in steps:
        g = s.generation if hasattr(s, "generation") else s
        out.append({k: _enc(getattr(g, k)) for k in _FIELDS})
    return out


def decode_steps(item: Sequence[dict]) -> list[StoredStep]:
    return [StoredStep(**{k: _dec(d.get(k)) for k in _FIELDS}) for d in item]
