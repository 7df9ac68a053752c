"""AndroidWorld client against a stand-in of AndroidWorld's HTTP env server (same endpoints, scripted task):
the right calls in the right order, json_action payloads, scoring at the end, bounded clear errors."""
import socket

import numpy as np
import pytest
from fastapi import FastAPI, HTTPException
from fastapi.testclient import TestClient

from gui_jax.core.types import Action
from gui_jax.envs.androidworld import AndroidWorldEnv, AndroidWorldError, AndroidWorldTask
from gui_jax.envs.base import Env


def stand_in():
    """Two tasks; 'ClockStopWatchRunning' succeeds once the stopwatch button (540, 1200) was clicked."""
    app = FastAPI()
    state = {"calls": [], "clicked": False, "screen": 0}
    suite = {"ClockStopWatchRunning": ["Run the stopwatch."], "SystemWifiTurnOn": ["Turn on Wi-Fi.", "Wi-Fi on!"]}

    def log(name, **kw):
        state["calls"].append((name, kw))

    @app.get("/health")
    def health():
        return {"status": "success"}

    @app.get("/suite/task_list")
    def task_list(max_index: int):
        names = list(suite)
        return {"task_list": names if max_index < 0 else names[:max_index]}

    @app.get("/suite/task_length")
    def task_length(task_type: str):
        return {"length": len(suite[task_type])}

    @app.post("/reset")
    def reset(go_home: bool):
        log("reset", go_home=go_home)
        state.update(clicked=False, screen=0)
        return {"status": "success"}

    @app.post("/task/initialize")
    def initialize(task_type: str, task_idx: int):
        if task_type not in suite:
            raise HTTPException(status_code=404, detail=f"no task {task_type}")
        log("initialize", task_type=task_type, task_idx=task_idx)
        return {"status": "success"}

    @app.post("/task/tear_down")
    def tear_down(task_type: str, task_idx: int):
        log("tear_down", task_type=task_type, task_idx=task_idx)
        return {"status": "success"}

    @app.get("/task/goal")
    def goal(task_type: str, task_idx: int):
        return {"goal": suite[task_type][task_idx]}

    @app.get("/task/score")
    def score(task_type: str, task_idx: int):
        log("score", task_type=task_type)
        return {"score": 1.0 if task_type == "ClockStopWatchRunning" and state["clicked"] else 0.0}

    @app.get("/screenshot")
    def screenshot(wait_to_stabilize: bool):
        img = np.full((24, 12, 4), state["screen"], np.uint8)  # RGBA, as the emulator returns
        return {"pixels": img.tolist()}

    @app.post("/execute_action")
    def execute(action: dict):
        log("execute", **action)
        if action.get("action_type") == "click" and (action["x"], action["y"]) == (540, 1200):
            state["clicked"] = True
        state["screen"] += 1
        return {"status": "success"}

    return app, state


def test_episode_issues_the_right_calls_and_scores_at_the_end():
    app, state = stand_in()
    env = AndroidWorldEnv("http://aw", client=TestClient(app), max_steps=5)
    assert isinstance(env, Env) and env.health()
    assert env.task_list() == ["ClockStopWatchRunning", "SystemWifiTurnOn"] and env.task_length("SystemWifiTurnOn") == 2
    task = AndroidWorldTask("ClockStopWatchRunning", 0)
    obs = env.reset(task)
    assert task.goal == "Run the stopwatch." and obs.goal == task.goal
    assert obs.screenshot.shape == (24, 12, 3) and obs.screen_size == (12, 24) and obs.screenshot.max() == 0
    obs, done, info = env.step(Action("open", text="Clock"))
    assert not done and info["valid"] and obs.screenshot.max() == 1
    obs, done, info = env.step(Action("long_press", element=3))  # no coordinates: not expressible, nothing sent
    assert not done and info["valid"] is False and "coordinates" in info["reason"]
    env.step(Action("click", x=540, y=1200))
    env.step(Action("scroll", direction="down"))
    _, done, info = env.step(Action("terminate", status="success"))
    assert done and info["success"] and info["reward"] == 1.0
    names = [c[0] for c in state["calls"]]
    assert names == ["reset", "initialize", "execute", "execute", "execute", "score"]
    executed = [c[1] for c in state["calls"] if c[0] == "execute"]
    assert executed == [{"action_type": "open_app", "app_name": "Clock"},
                        {"action_type": "click", "x": 540, "y": 1200},
                        {"action_type": "scroll", "direction": "down"}]
    # the next episode tears the last task down first; the step limit ends an episode and scores it
    env.reset(AndroidWorldTask("SystemWifiTurnOn", 1))
    assert state["calls"][-3:] == [("tear_down", {"task_type": "ClockStopWatchRunning", "task_idx": 0}),
                                   ("reset", {"go_home": True}),
                                   ("initialize", {"task_type": "SystemWifiTurnOn", "task_idx": 1})]
    for _ in range(4):
        assert env.step(Action("wait", time=1))[1] is False
    _, done, info = env.step(Action("wait", time=1))
    assert done and info["truncated"] and info["success"] is False
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(Action("wait", time=1))
    env.close()
    assert state["calls"][-1][0] == "tear_down"


def test_bad_task_is_a_clear_value_error():
    app, _ = stand_in()
    env = AndroidWorldEnv("http://aw", client=TestClient(app))
    with pytest.raises(ValueError, match="/task/initialize rejected \\(HTTP 404\\).*no task Nope"):
        env.reset(AndroidWorldTask("Nope", 0))


def test_offline_server_fails_fast_with_env_failure():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = AndroidWorldEnv(f"http://127.0.0.1:{port}", timeout_s=2, connect_timeout_s=1)
    with pytest.raises(AndroidWorldError, match="unreachable on POST /reset"):
        env.reset(AndroidWorldTask("ClockStopWatchRunning", 0))
    env.close()
