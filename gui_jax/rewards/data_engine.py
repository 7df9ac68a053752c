"""Reward-model training data (UI-Genie §3.2, Math-Shepherd potential labels), as records that point at
episodes instead of copying screens.

A trajectory is a tuple of `StepRef(episode_id, step)`: the observation before that step of that episode
and the action taken there (`action` overrides the episode's own action for sampled or corrupted steps).
A `RewardRecord` asks one question of the reward model:
  kind "step":    given `goal`, the history `steps[:-1]` and the screen of `steps[-1]`, is the candidate
                  action of `steps[-1]` right?                                 (step reward)
  kind "outcome": given `goal` and the whole trajectory `steps`, is `terminate(success)` right now, i.e. is
                  the task complete?                                           (task reward)
Sources (the `source` field), each a function below:
  rule          sampled candidate actions labelled by the rule matcher against the expert's action;
  sibling       the same, for clicks on other labelled rows of the screen at an expert click (the reward_model
                job's `rm.data.sibling_clicks`: negatives only a goal-to-label match tells apart);
  expert        the expert's own steps and outcome (positives);
  truncation    a successful episode cut before its end, claimed complete → outcome negative;
  substitution  a prefix of one episode followed by a segment of another task in the same app → the
                substituted steps and the outcome are negative for the first task's goal;
  continuation  redundant steps after a completed task → those steps and the outcome are negative;
  hard_negative candidates an earlier reward model scored positive that the rule marks wrong;
  potential     steps of failed trajectories: positive iff one of k continuation rollouts from there succeeds
                (the PhoneSim rollouts: gui_jax/rewards/potential.py).
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Optional, Sequence

import numpy as np

from gui_jax.core.matcher import match_action
from gui_jax.core.types import Action, Episode

# synth / synth_failure: a self-improvement round's searched trajectories (synthesis_records)
SOURCES = ("rule", "sibling", "expert", "truncation", "substitution", "continuation", "hard_negative", "potential",
           "synth", "synth_failure")


@dataclass(frozen=True)
class StepRef:
    episode_id: str
    step: int
    action: Optional[Action] = None  # None = the episode's own action at that step


@dataclass(frozen=True)
class RewardRecord:
    kind: str                 # "step" | "outcome"
    goal: str
    steps: tuple              # tuple[StepRef, ...]; for "step" the last one is the scored step
    label: bool
    source: str
    info: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if self.kind not in ("step", "outcome"):
            raise ValueError(f"RewardRecord.kind must be 'step' or 'outcome', got {self.kind!r}")
        if self.source not in SOURCES:
            raise ValueError(f"RewardRecord.source {self.source!r} is not one of {SOURCES}")
        if self.kind == "step" and not self.steps:
            raise ValueError("a step record needs at least the scored step")

    def to_json(self) -> str:
        d = asdict(self)
        d["steps"] = [{"episode_id": s.episode_id, "step": s.step,
                       "action": None if s.action is None else s.action.to_dict()} for s in self.steps]
        return json.dumps(d, ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> "RewardRecord":
        d = json.loads(line)
        steps = tuple(StepRef(s["episode_id"], int(s["step"]),
                              None if s["action"] is None else Action.from_dict(s["action"])) for s in d["steps"])
        return cls(d["kind"], d["goal"], steps, bool(d["label"]), d["source"], d.get("info", {}))


def _refs(ep: Episode, upto: int) -> tuple:
    return tuple(StepRef(str(ep.episode_id), t) for t in range(upto))


def expert_records(ep: Episode) -> list[RewardRecord]:
    """Every expert step is a positive step record; the whole episode is a positive outcome record."""
    refs = _refs(ep, len(ep.actions))
    out = [RewardRecord("step", ep.goal, refs[: t + 1], True, "expert") for t in range(len(refs))]
    out.append(RewardRecord("outcome", ep.goal, refs, True, "expert"))
    return out


def rule_label(ep: Episode, t: int, candidate: Action, *, bbox_scale: float = 1.2,
               dist_threshold: float = 0.04) -> bool:
    """Is `candidate` (screen pixels) the expert's action at step t? (the training matcher's exact match)"""
    obs = ep.observations[t]
    bbox = ep.target_bboxes[t] if ep.target_bboxes else None
    _, exact = match_action(candidate, ep.actions[t], image_size=tuple(obs.screen_size), expert_bbox=bbox,
                            bbox_scale=bbox_scale, dist_threshold=dist_threshold,
                            elements=[e.bounds for e in obs.ui_elements], ui=obs.ui_elements)
    return bool(exact)


def rule_verified_records(ep: Episode, t: int, candidates: Sequence[Action], source: str = "rule",
                          **match_kw) -> list[RewardRecord]:
    """Sampled candidate actions at step t (expert history before it), labelled by the rule matcher; `source`
    names how they were drawn ("rule", "sibling")."""
    hist = _refs(ep, t)
    return [RewardRecord("step", ep.goal, hist + (StepRef(str(ep.episode_id), t, a),),
                         rule_label(ep, t, a, **match_kw), source) for a in candidates]


def working_steps(ep: Episode) -> int:
    """Steps before the episode's final `terminate` (all steps when it has none): an outcome record
    drops a trailing terminate, so cutting only that step leaves the complete trajectory."""
    n = len(ep.actions)
    return n - 1 if n and ep.actions[-1].type == "terminate" else n


def truncation_records(ep: Episode, keep: Sequence[int]) -> list[RewardRecord]:
    """The episode cut after `k` working steps (0 < k < working_steps), claimed complete: outcome negatives.
    k = working_steps would keep every step but the final terminate: the expert's own (positive) outcome."""
    n = working_steps(ep)
    bad = [k for k in keep if not 0 < k < n]
    if bad:
        raise ValueError(f"truncation lengths {bad} must be in 1..{n - 1} for episode {ep.episode_id!r} "
                         f"({n} steps before its final terminate)")
    return [RewardRecord("outcome", ep.goal, _refs(ep, k), False, "truncation", {"kept": k}) for k in keep]


def substitution_records(ep: Episode, other: Episode, split: int, other_from: int) -> list[RewardRecord]:
    """`ep`'s first `split` steps, then `other`'s steps from `other_from` on (another task, same app): the
    substituted steps are negative step records for `ep`'s goal, and the outcome is negative."""
    if ep.app != other.app or ep.goal == other.goal:
        raise ValueError(f"substitution needs another task of the same app: {ep.episode_id!r} ({ep.app}) vs "
                         f"{other.episode_id!r} ({other.app})")
    if not (0 <= split < working_steps(ep) and 0 <= other_from < working_steps(other)):
        # the prefix must stop before `ep` is done, and the tail must hold a working step of `other`:
        # otherwise the outcome record is `ep`'s complete trajectory, labelled negative
        raise ValueError(f"split {split} / other_from {other_from} out of range: split < {working_steps(ep)} "
                         f"(working steps of {ep.episode_id!r}), other_from < {working_steps(other)} "
                         f"(of {other.episode_id!r})")
    prefix = _refs(ep, split)
    tail = tuple(StepRef(str(other.episode_id), t) for t in range(other_from, len(other.actions)))
    out = [RewardRecord("step", ep.goal, prefix + tail[: i + 1], False, "substitution",
                        {"from": str(other.episode_id)}) for i in range(len(tail))]
    out.append(RewardRecord("outcome", ep.goal, prefix + tail, False, "substitution", {"from": str(other.episode_id)}))
    return out


def continuation_records(ep: Episode, extra: Sequence[StepRef]) -> list[RewardRecord]:
    """Redundant steps after the task is complete: the expert trajectory minus its final terminate, then
    `extra` steps (screens of the finished episode's last state, or of other episodes): each extra step is
    negative, and claiming completion after them is negative too (the agent failed to stop)."""
    if not ep.actions or ep.actions[-1].type != "terminate":
        raise ValueError(f"episode {ep.episode_id!r} must end with terminate to build a continuation")
    done = _refs(ep, len(ep.actions) - 1)
    extra = tuple(extra)
    if not extra:
        raise ValueError("continuation needs at least one extra step")
    out = [RewardRecord("step", ep.goal, done + extra[: i + 1], False, "continuation") for i in range(len(extra))]
    out.append(RewardRecord("outcome", ep.goal, done + extra, False, "continuation"))
    return out


def check_label_conflicts(records: Sequence[RewardRecord], episodes) -> None:
    """Raises if two records show the RM the same input with opposite labels (naming both records).

    episodes: {episode_id: Episode}, to see a step's own action; an outcome record drops a trailing
    terminate, as the RM prompt does."""
    def key(r: RewardRecord):
        steps = r.steps
        if r.kind == "outcome" and steps:
            last = steps[-1]
            a = last.action if last.action is not None else episodes[last.episode_id].actions[last.step]
            if a.type == "terminate":
                steps = steps[:-1]
        return (r.kind, r.goal, steps)
    seen: dict = {}
    for i, r in enumerate(records):
        j = seen.setdefault(key(r), i)
        if records[j].label != r.label:
            raise ValueError(f"reward records {j} ({records[j].source}, label {records[j].label}) and {i} "
                             f"({r.source}, label {r.label}) show the same {r.kind} input for goal {r.goal!r}")


def hard_negative_records(records: Iterable[RewardRecord], scores: Sequence[float],
                          threshold: float = 0.5) -> list[RewardRecord]:
    """Rule-negative records that an earlier reward model scored ≥ threshold, i.e. judged correct (its false
    positives), as "hard_negative" records carrying that score and the source they were drawn as."""
    records = list(records)
    scores = [float(s) for s in scores]
    if len(records) != len(scores):
        raise ValueError(f"{len(records)} records but {len(scores)} scores from the earlier reward model")
    for i, (r, s) in enumerate(zip(records, scores)):
        if not math.isfinite(s):
            last = r.steps[-1] if r.steps else None
            where = f" (episode {last.episode_id!r}, step {last.step})" if last else ""
            raise ValueError(f"the earlier reward model scored record {i}{where} {s}; expected a finite P(+)")
    return [RewardRecord(r.kind, r.goal, r.steps, False, "hard_negative", {"score": s, "drawn_as": r.source})
            for r, s in zip(records, scores) if not r.label and s >= threshold]


def potential_labels(num_steps: int, continuation_succeeds: Callable[[int, int], bool], k: int = 5) -> list[bool]:
    """Step t of a failed trajectory is positive iff at least one of `k` continuation rollouts started after
    executing steps 0..t succeeds. continuation_succeeds(t, i) runs rollout i from step t (it stops early at
    the first success)."""
    labels = []
    for t in range(num_steps):
        labels.append(any(continuation_succeeds(t, i) for i in range(k)))
    return labels


def potential_records(ep: Episode, labels: Sequence[bool]) -> list[RewardRecord]:
    """One step record per step of the (failed) trajectory `ep`, its own history before it, labelled by
    `potential_labels`."""
    if len(labels) != len(ep.actions):
        raise ValueError(f"{len(labels)} labels for {len(ep.actions)} steps of {ep.episode_id!r}")
    bad = [t for t, label in enumerate(labels) if not isinstance(label, (bool, np.bool_))]
    if bad:
        raise ValueError(f"potential labels of {ep.episode_id!r} must be True / False; step {bad[0]} has "
                         f"{labels[bad[0]]!r}")
    refs = _refs(ep, len(ep.actions))
    return [RewardRecord("step", ep.goal, refs[: t + 1], bool(label), "potential") for t, label in enumerate(labels)]


def synthesis_records(successes: Sequence[Episode], failures: Sequence[Episode]) -> list[RewardRecord]:
    """A self-improvement round's reward data (UI-Genie's co-evolution): each successful searched trajectory
    gives positive step records and a positive outcome (source "synth") plus its truncations as outcome
    negatives; each finished unsuccessful one gives a negative outcome ("synth_failure"). No draws: the
    records follow from the trajectories alone."""
    out: list[RewardRecord] = []
    for ep in successes:
        out += [RewardRecord(r.kind, r.goal, r.steps, True, "synth") for r in expert_records(ep)]
        out += truncation_records(ep, range(1, working_steps(ep)))
    for ep in failures:
        if not ep.actions:
            raise ValueError(f"failed trajectory {ep.episode_id!r} has no steps")
        out.append(RewardRecord("outcome", ep.goal, _refs(ep, len(ep.actions)), False, "synth_failure"))
    return out


def write_records(path: str, records: Iterable[RewardRecord]) -> int:
    n = 0
    with open(path, "w") as f:
        for r in records:
            f.write(r.to_json() + "\n")
            n += 1
    return n


def read_records(path: str) -> list[RewardRecord]:
    out = []
    with open(path) as f:
        for i, line in enumerate(f):
            if line.strip():
                try:
                    out.append(RewardRecord.from_json(line))
                except (KeyError, ValueError, TypeError) as e:
                    raise ValueError(f"{path}: record {i}: {type(e).__name__}: {e}") from e
    return out


def label_balance(records: Sequence[RewardRecord]) -> dict:
    """Positives / negatives per kind and source (for class balancing and reports)."""
    out: dict = {}
    for r in records:
        d = out.setdefault(f"{r.kind}/{r.source}", {"pos": 0, "neg": 0})
        d["pos" if r.label else "neg"] += 1
    return out
