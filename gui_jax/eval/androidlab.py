"""AndroidLab's episode metrics (docs/algorithms.md §11) from online evaluation episodes, for every job that
runs them: the in-process PhoneSim loop (eval/online_success.py) and the rollout engine's records (env pools).

Per episode: success; agent steps (an unparsable response counts); reasonable operations = steps after which
the screen changed (the observation before and after differ), a terminate / answer step counting as reasonable
(it ends the episode: there is no next screen) and an unparsable one as not (our choice); expert steps = the
task's `optimal_steps` (PhoneSim: the oracle's step count, terminate included), unknown for other tasks; and
sub-goals done / total where the env reports them in a step's info (`subgoals_done`, `subgoals_total`; the
last report counts). PhoneSim templates, devices and AndroidWorld report no sub-goals, so SubSR is NaN there
and `subgoal_episodes` says how many episodes carried them.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from gui_jax.core.types import Action, Observation
from gui_jax.eval.metrics import androidlab_metrics

ENDING_ACTIONS = ("terminate", "answer")


def reasonable_step(before: Observation, action: Optional[Action], after: Optional[Observation]) -> bool:
    """AndroidLab's reasonable operation: the screen changed (see module docstring for the edge cases)."""
    if action is None:
        return False
    if action.type in ENDING_ACTIONS:
        return True
    return after is not None and not (before == after)


def expert_steps(task: Any) -> Optional[int]:
    """The task's expert step count, or None when it has none."""
    n = getattr(task, "optimal_steps", None)
    return int(n) if n else None


def subgoals(info: Mapping) -> Optional[tuple[int, int]]:
    """(done, total) from an env step's info, or None when the env reported no sub-goals."""
    if info.get("subgoals_total") is None:
        return None
    return int(info.get("subgoals_done", 0)), int(info["subgoals_total"])


def trajectory_fields(record) -> dict:
    """The AndroidLab fields of a rollout engine `TrajectoryRecord` (see `androidlab_report`)."""
    steps = record.steps
    after = [s.observation for s in steps[1:]] + [record.final_observation]
    reported = [sg for sg in (subgoals(s.info or {}) for s in steps) if sg is not None]
    return {"reasonable_ops": sum(reasonable_step(s.observation, s.action, a) for s, a in zip(steps, after)),
            "expert_steps": expert_steps(record.task), "subgoals": reported[-1] if reported else None}


def androidlab_report(rows: Sequence[Mapping]) -> dict:
    """{SR, SubSR, RRR, ROR, episodes, expert_step_episodes, subgoal_episodes} over episode rows carrying
    success, steps, reasonable_ops, expert_steps (None: unknown) and subgoals ((done, total) or None).
    RRR counts the successful episodes with a known expert step count; SubSR the episodes with sub-goals."""
    rows = list(rows)
    with_sg = [r for r in rows if r.get("subgoals") is not None]
    m = androidlab_metrics(success=[bool(r["success"]) for r in rows],
                           subgoals_done=[r["subgoals"][0] if r.get("subgoals") else 0 for r in rows],
                           subgoals_total=[r["subgoals"][1] if r.get("subgoals") else 0 for r in rows],
                           expert_steps=[r.get("expert_steps") or 0 for r in rows],
                           agent_steps=[int(r["steps"]) for r in rows],
                           reasonable_ops=[int(r["reasonable_ops"]) for r in rows])
    known = [r for r in rows if r.get("expert_steps")]
    if len(known) < len(rows):  # RRR over the episodes whose expert step count is known
        m["RRR"] = androidlab_metrics([bool(r["success"]) for r in known], [0] * len(known), [0] * len(known),
                                      [r["expert_steps"] for r in known], [int(r["steps"]) for r in known],
                                      [0] * len(known))["RRR"] if known else float("nan")
    return {**m, "episodes": len(rows), "expert_step_episodes": len(known), "subgoal_episodes": len(with_sg)}


def records_report(records) -> dict:
    """`androidlab_report` over a rollout engine's completed `TrajectoryRecord`s (env failures are not episodes
    of the policy)."""
    return androidlab_report([{"success": bool(r.success), "steps": len(r.steps), **trajectory_fields(r)}
                              for r in records if r.status == "completed"])
