"""AndroidWorld client: the env protocol over AndroidWorld's HTTP env server (one emulator per server), so
AWG-style fleets of containerised AndroidWorld emulators train with our trainers (behind `EnvPool`).

    env = AndroidWorldEnv("http://127.0.0.1:5000", timeout_s=60)
    tasks = env.task_list()                          # the server's suite: task types
    task = AndroidWorldTask("ContactsAddContact", 0)
    obs = env.reset(task)                            # reset → initialise the task → goal + screenshot
    obs, done, info = env.step(Action("click", x=540, y=1200))
    env.close()

Endpoints used (AndroidWorld's server): POST /reset?go_home, POST /task/initialize and /task/tear_down
(task_type, task_idx), GET /task/goal, GET /task/score, GET /screenshot?wait_to_stabilize, POST
/execute_action (a json_action dict: AndroidWorld's action format, the one AndroidControl's data uses too),
GET /suite/task_list?max_index, GET /health, POST /close. The server reports no UI tree, so observations
carry the screenshot only (screen_size = its pixels). As in AndroidWorld's own episode loop, the episode
ends on terminate(...) or at max_steps and the task then scores the device state (success = score ≥ 0.5,
whatever status the agent claimed); answer(text) is sent as AndroidWorld's answer action. Every call has a
timeout; transport faults and 5xx raise `EnvFailure` subclasses, other 4xx a ValueError naming the call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from gui_jax.core.types import Action, Observation
from gui_jax.envs.base import EnvFailure


class AndroidWorldError(EnvFailure):
    """The AndroidWorld server could not be reached, timed out or failed (5xx)."""


@dataclass
class AndroidWorldTask:
    """A task of the server's suite: its type (class name) and instance index. `goal` is filled by reset."""

    task_type: str
    task_idx: int = 0
    goal: str = ""

    @property
    def task_id(self) -> str:
        return f"androidworld.{self.task_type}#{self.task_idx}"

    @property
    def template(self) -> str:
        return f"androidworld.{self.task_type}"


class AndroidWorldEnv:
    def __init__(self, url: str, *, timeout_s: float = 120.0, connect_timeout_s: float = 5.0,
                 max_steps: int = 30, wait_to_stabilize: bool = False, client: Any = None):
        import httpx
        self.url = url.rstrip("/")
        self.max_steps, self.wait_to_stabilize = max_steps, wait_to_stabilize
        self._timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        self._own_client = client is None
        # `client` lets tests pass a Starlette TestClient bound to an in-process stand-in server
        self._http = client if client is not None else httpx.Client(base_url=self.url, timeout=self._timeout)
        self._httpx = httpx
        self._task: Optional[AndroidWorldTask] = None
        self._steps = 0
        self._done = True
        self._answer: Optional[str] = None

    # ------------------------------------------------------------------ transport
    def _call(self, method: str, path: str, *, params: Optional[dict] = None, json: Any = None) -> dict:
        try:
            r = self._http.request(method, path, params=params, json=json)
        except self._httpx.TimeoutException as e:
            raise AndroidWorldError(f"AndroidWorld {method} {path} timed out ({self.url})") from e
        except self._httpx.TransportError as e:
            raise AndroidWorldError(f"AndroidWorld server {self.url} unreachable on {method} {path}: "
                                    f"{type(e).__name__}: {e}") from e
        if r.status_code >= 500:
            raise AndroidWorldError(f"AndroidWorld {method} {path} failed: HTTP {r.status_code} {r.text[:200]}")
        if r.status_code >= 400:
            raise ValueError(f"AndroidWorld {method} {path} rejected (HTTP {r.status_code}): {r.text[:300]}")
        try:
            return r.json()
        except ValueError as e:
            raise AndroidWorldError(f"AndroidWorld {method} {path} answered non-JSON: {r.text[:100]!r}") from e

    # ------------------------------------------------------------------ suite
    def health(self) -> bool:
        return self._call("GET", "/health").get("status") == "success"

    def task_list(self, max_index: int = -1) -> list[str]:
        return list(self._call("GET", "/suite/task_list", params={"max_index": max_index})["task_list"])

    def task_length(self, task_type: str) -> int:
        return int(self._call("GET", "/suite/task_length", params={"task_type": task_type})["length"])

    # ------------------------------------------------------------------ env protocol
    def _observe(self) -> Observation:
        pixels = self._call("GET", "/screenshot", params={"wait_to_stabilize": self.wait_to_stabilize})["pixels"]
        shot = np.asarray(pixels, dtype=np.uint8)
        if shot.ndim != 3 or shot.shape[2] < 3:
            raise AndroidWorldError(f"AndroidWorld /screenshot returned pixels of shape {shot.shape}")
        shot = np.ascontiguousarray(shot[..., :3])
        return Observation(screenshot=shot, goal=self._task.goal if self._task else "",
                           screen_size=(shot.shape[1], shot.shape[0]))

    def _task_params(self) -> dict:
        return {"task_type": self._task.task_type, "task_idx": self._task.task_idx}

    def reset(self, task: AndroidWorldTask) -> Observation:
        if not isinstance(task, AndroidWorldTask):
            raise TypeError(f"AndroidWorldEnv.reset takes an AndroidWorldTask, got {type(task).__name__}")
        if self._task is not None:
            self._call("POST", "/task/tear_down", params=self._task_params())
        self._task, self._steps, self._done, self._answer = task, 0, False, None
        self._call("POST", "/reset", params={"go_home": True})
        self._call("POST", "/task/initialize", params=self._task_params())
        task.goal = str(self._call("GET", "/task/goal", params=self._task_params())["goal"])
        return self._observe()

    def score(self) -> float:
        return float(self._call("GET", "/task/score", params=self._task_params())["score"])

    def step(self, action: Action) -> tuple[Observation, bool, dict]:
        from gui_jax.data.androidcontrol import action_to_androidcontrol  # AndroidWorld's json_action format
        if self._task is None or self._done:
            raise RuntimeError("AndroidWorldEnv.step before reset (or after the episode ended)")
        self._steps += 1
        info: dict = {"valid": True, "success": False}
        if action.type == "terminate":
            self._done = True
        else:
            try:
                payload = action_to_androidcontrol(action)
            except ValueError as e:
                info.update(valid=False, reason=str(e))
            else:
                if action.type == "answer":
                    self._answer = action.text
                self._call("POST", "/execute_action", json=payload)
        if self._steps >= self.max_steps:
            self._done, info["truncated"] = True, True
        obs = self._observe()
        if self._done:
            info["reward"] = self.score()
            info["success"] = info["reward"] >= 0.5
        return obs, self._done, info

    def close(self) -> None:
        try:
            if self._task is not None:
                self._call("POST", "/task/tear_down", params=self._task_params())
        except (EnvFailure, ValueError):
            pass  # closing a dead emulator must not raise
        finally:
            self._task = None
            if self._own_client:
                self._http.close()
