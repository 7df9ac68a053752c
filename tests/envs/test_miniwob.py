"""MiniWob++ in headless Chromium behind the env protocol: scripted experts solve their pages through our
Action type, a random policy mostly fails, rewards are the package's, bad actions are invalid, not fatal."""
import os
import random

import pytest

from gui_jax.core.types import Action
from gui_jax.envs import miniwob as mw
from gui_jax.envs.base import Env
from gui_jax.envs.miniwob_experts import EXPERT_TASKS, NoExpertError, expert_actions


@pytest.fixture(scope="module")
def env():
    e = mw.MiniWobEnv(max_steps=8, max_cached_pages=len(EXPERT_TASKS))
    yield e
    e.close()


def test_task_list_matches_androidworld_registry():
    assert len(mw.ANDROIDWORLD_MINIWOB_TASKS) == 92 == len(set(mw.ANDROIDWORLD_MINIWOB_TASKS))
    missing = [t for t in mw.ANDROIDWORLD_MINIWOB_TASKS if t not in mw.available_tasks()]
    assert missing == ["drag-item"]
    with pytest.raises(ValueError, match="did you mean \\['click-test'"):
        mw.miniwob_tasks(["click-tset"], [0])


def test_missing_chromium_names_the_install_command(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("MINIWOB_CHROME_BINARY", raising=False)
    monkeypatch.delenv("MINIWOB_CHROMEDRIVER", raising=False)
    with pytest.raises(mw.ChromiumMissingError, match="apt-get install -y chromium chromium-driver"):
        mw.MiniWobEnv()


def test_scripted_experts_solve_their_pages_with_the_packages_reward(env):
    assert isinstance(env, Env) and len(EXPERT_TASKS) >= 8
    assert {"click-test", "click-button", "enter-text"} <= set(EXPERT_TASKS)
    for name in EXPERT_TASKS:
        task = mw.MiniWobTask(name, seed=3)
        obs = env.reset(task)
        assert task.goal and obs.goal == task.goal and obs.screenshot.shape == (210, 160, 3)
        assert obs.screen_size == (160, 210)
        for action in expert_actions(task, obs):
            obs, done, info = env.step(action)
            assert info["valid"], (name, action, info)
            if done:
                break
        assert done and info["success"], (name, task.goal, info)
        page = env._envs[name].instance.get_metadata()  # the page's own bookkeeping
        assert info["raw_reward"] == page["raw_reward"] == 1.0
        assert info["reward"] == pytest.approx(page["env_reward"]) and 0.5 < info["reward"] <= 1.0


def test_random_policy_mostly_fails(env):
    rng = random.Random(0)
    wins = runs = 0
    for name in EXPERT_TASKS:
        for seed in (5, 6):
            env.reset(mw.MiniWobTask(name, seed=seed))
            done, info = False, {}
            for _ in range(4):
                obs, done, info = env.step(Action("click", x=rng.randrange(160), y=rng.randrange(50, 210)))
                if done:
                    break
            wins += bool(info.get("success"))
            runs += 1
    assert wins / runs < 0.35, (wins, runs)


def test_actions_without_miniwob_meaning_are_invalid_and_leave_the_page(env):
    task = mw.MiniWobTask("enter-text", seed=1)
    obs = env.reset(task)
    for bad in (Action("long_press", x=10, y=60), Action("system_button", button="Home"), Action("open", text="x"),
                Action("click", x=100, y=900)):
        obs2, done, info = env.step(bad)
        assert not done and info["valid"] is False and info["reason"], bad
        assert obs2 == obs
    # element-index clicks go through CLICK_ELEMENT: focus the field by index, type, submit → success
    field = next(e.index for e in obs.ui_elements if e.cls == "input_text")
    env.step(Action("click", element=field))
    env.step(Action("type", text=task.fields["target"]))
    _, done, info = env.step(Action("click", text="Nowhere"))
    assert not done and info["valid"] is False and "label 'Nowhere' names no element" in info["reason"]
    _, done, info = env.step(Action("click", text="submit"))  # by label: resolved to the Submit button
    assert done and info["success"]


def test_terminate_ends_an_unsolved_episode_as_failure(env):
    env.reset(mw.MiniWobTask("click-button", seed=2))
    _, done, info = env.step(Action("terminate", status="success"))
    assert done and info["success"] is False and info["raw_reward"] == 0.0
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(Action("wait", time=1))
    with pytest.raises(NoExpertError):
        expert_actions(mw.MiniWobTask("book-flight", 0), None)
