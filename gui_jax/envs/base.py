"""The environment protocol every backend speaks (PhoneSim, env-server client, MiniWob++,
uiautomator2 devices, the AndroidWorld client). Trainers, evaluators and the env pool see only this.

    obs = env.reset(task)                 # task: an `EnvTask` (carries its own success check)
    obs, done, info = env.step(action)    # action: gui_jax.core.Action in screen pixels
    env.close()

`info` keys every backend fills:
  - "valid" (bool): the action could be applied (invalid actions leave the state unchanged);
  - "reason" (str): why not, when invalid;
  - "success" (bool): only meaningful when done — the task's own check (PhoneSim: app state; MiniWob++:
    the task's reward > 0; AndroidWorld: its `is_successful`);
  - "reward" (float, optional): the task's own scalar reward when the backend has one.
Infrastructure faults (a crashed or hung emulator, a lost connection) raise `EnvFailure` (or one of its
subclasses); they are never reported as a policy failure through `info["success"] = False`.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from gui_jax.core.types import Action, Observation


class EnvFailure(RuntimeError):
    """The environment itself failed (crash, hang, lost connection): retry elsewhere or record it."""


@runtime_checkable
class EnvTask(Protocol):
    """What an env needs from a task. `task_id` names the instance (groups, logs); `goal` is shown to
    the agent; backends read their own extra fields (PhoneSim: template + seed; MiniWob++: env name +
    seed)."""

    @property
    def task_id(self) -> str: ...

    @property
    def goal(self) -> str: ...


@runtime_checkable
class Env(Protocol):
    def reset(self, task: Any) -> Observation: ...

    def step(self, action: Action) -> tuple[Observation, bool, dict]: ...

    def close(self) -> None: ...
