"""Evaluated episodes saved for the trajectory viewer (`python -m gui_jax.view`).

Jobs that evaluate through the rollout engine (env_eval, online_rl's held-out evaluation) keep the first
`eval.save_trajectories` episodes (in task order) as trajectory folders in core/serialize.save_trajectory's format:
per step the screen the policy saw (the screenshot, or, with render=False, the UI elements the viewer draws as a
wireframe), the response, the parsed action (None: it did not parse), the step reward (the outcome reward: 1 on the
last step of a success) and the env's info; per episode the goal, template, success, status and the reward model's
outcome score when the run has one (`info["rm_score"]`).
"""
from __future__ import annotations

import os
import shutil
from typing import Optional, Sequence

from gui_jax.config_check import SAVE_TRAJECTORIES
from gui_jax.core.serialize import save_trajectory
from gui_jax.core.types import Step, Trajectory

FOLDER = "trajectories"


def saved_count(config) -> int:
    """How many evaluated episodes a run keeps (`eval.save_trajectories`; its declared default without one)."""
    ev = config.get("eval")
    return int(ev.get("save_trajectories", SAVE_TRAJECTORIES) if ev is not None else SAVE_TRAJECTORIES)


def _materialize(obs):
    return obs.materialize() if hasattr(obs, "materialize") else obs


def to_trajectory(record, rm_score: Optional[float] = None) -> Trajectory:
    """A rollout engine's TrajectoryRecord as a Trajectory (actions in screen pixels, as the engine sends them)."""
    success = bool(record.success) and record.status == "completed"
    last = len(record.steps) - 1
    steps = [Step(observation=_materialize(s.observation), action=s.action, response=s.response,
                  reward=float(success and t == last), info=dict(s.info)) for t, s in enumerate(record.steps)]
    task = record.task
    info = {"template": getattr(task, "template", "") or record.task_id.split("#")[0], "coords": "screen",
            "status": record.status, "trial": int(record.trial), "truncated": bool(record.truncated)}
    if rm_score is not None:
        info["rm_score"] = float(rm_score)
    return Trajectory(task_id=record.task_id, goal=getattr(task, "goal", ""), steps=steps, success=success,
                      info=info)


def save_records(records: Sequence, folder: str, keep: int, rm_scores: Optional[Sequence[float]] = None) -> int:
    """The first `keep` records as trajectory folders `<folder>/<i>_<task id>` (an earlier run's there are
    replaced); returns how many were saved."""
    chosen = list(records)[:max(int(keep), 0)]
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    for i, rec in enumerate(chosen):
        name = f"{i:06d}_" + "".join(c if c.isalnum() or c in "-._" else "_" for c in rec.task_id)
        save_trajectory(to_trajectory(rec, None if rm_scores is None else rm_scores[i]), os.path.join(folder, name))
    return len(chosen)


def report_line(workdir: str, saved: int) -> str:
    """The results.md line naming the command that writes the page of the saved episodes."""
    if not saved:
        return "trajectories: none saved (eval.save_trajectories = 0)\n"
    folder = os.path.join(workdir, FOLDER)
    return (f"trajectories: {saved} evaluated episodes in {folder}; "
            f"`python -m gui_jax.view {folder} --out {os.path.join(workdir, 'report.html')}` writes one page of "
            "them (screens with the actions drawn, responses, rewards, outcomes; filters by template and outcome)\n")
