"""env_eval keeps its evaluated episodes for the viewer (issue 31): the tiny 1-layer model plays 3 PhoneSim episodes,
the first `eval.save_trajectories` = 2 are written as trajectory folders (UI elements, responses, parsed actions,
step rewards, success), results.md names the viewer command, and `python -m gui_jax.view` turns the run folder
into a page listing exactly those episodes with their goals, responses and outcomes."""
import html
import json
import re
import subprocess
import sys

from gui_jax.core.serialize import load_trajectory
from gui_jax.jobs import env_eval, load_config


def test_env_eval_saves_trajectories_the_viewer_shows(tmp_path):
    cfg = load_config("configs/miniwob_eval.py", **{
        "env.backend": "phonesim", "env.tasks": ("music.play",), "env.seeds": (1, 2, 3), "env.n_envs": 3,
        "env.resolution": (112, 252), "eval.untrained": True, "eval.max_steps": 2, "eval.save_trajectories": 2,
        "model.num_hidden_layers": 1, "model.max_new_tokens": 8})
    wd = tmp_path / "run"
    wd.mkdir()
    env_eval.run(cfg, str(wd))
    out = json.loads((wd / "env_eval.json").read_text())
    assert out["per_task"]["music.play"]["n"] == 3 and out["trajectories_saved"] == 2
    lab = out["androidlab"]                     # AndroidLab metrics over the same 3 completed episodes
    assert lab["episodes"] == 3 and lab["SR"] == out["per_task"]["music.play"]["successes"] / 3
    assert lab["subgoal_episodes"] == 0 and 0.0 <= lab["ROR"] <= 1.0
    folders = sorted(p for p in (wd / "trajectories").iterdir())
    assert [p.name for p in folders] == ["000000_music.play_1", "000001_music.play_2"]
    trajs = [load_trajectory(p) for p in folders]
    for tr, seed in zip(trajs, (1, 2)):
        assert tr.task_id == f"music.play#{seed}" and 1 <= len(tr.steps) <= 2
        assert tr.info["template"] == "music.play" and tr.info["status"] == "completed"
        assert all(s.response and s.observation.ui_elements for s in tr.steps)   # the model's text, the screen
        assert [s.reward for s in tr.steps] == [0.0] * (len(tr.steps) - 1) + [float(tr.success)]
    successes = out["per_task"]["music.play"]["successes"]
    results = (wd / "results.md").read_text()
    assert f"python -m gui_jax.view {wd / 'trajectories'} --out {wd / 'report.html'}" in results
    assert "| music.play | 3 |" in results

    page = tmp_path / "x.html"
    subprocess.run([sys.executable, "-m", "gui_jax.view", str(wd), "--out", str(page)], check=True,
                   capture_output=True, timeout=120)
    text = page.read_text()
    sections = re.findall(r'<section class="episode (\w+)".*?</section>', text, flags=re.S)
    bodies = re.findall(r'<section class="episode \w+".*?</section>', text, flags=re.S)
    assert len(bodies) == 2 and sections == ["success" if t.success else "failure" for t in trajs]
    for body, tr in zip(bodies, trajs):
        assert html.escape(tr.goal) in body
        for s in tr.steps:
            assert html.escape(s.response) in body
    assert successes >= sum(t.success for t in trajs)

