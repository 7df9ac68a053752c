"""SOP-vs-online report: hand-checked least squares and the job over run directories."""
import json
import subprocess
import sys
import pathlib

import numpy as np
import pytest

from gui_jax.eval.correlation import linear_fit
from gui_jax.jobs.sop_report import collect_points

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_linear_fit_hand_values():
    # y = 2x + 1 exactly → R² = 1
    f = linear_fit([0, 1, 2, 3], [1, 3, 5, 7])
    assert (f["slope"], f["intercept"], f["r2"], f["n"]) == (pytest.approx(2), pytest.approx(1), pytest.approx(1), 4)
    # x = [0,1,2], y = [0,2,1]: slope = Sxy/Sxx = 1/2, intercept = 1 − 0.5 = 0.5,
    # residuals [-0.5, 1, -0.5] → SS_res = 1.5, SS_tot = 2 → R² = 0.25
    f = linear_fit([0, 1, 2], [0, 2, 1])
    assert f["slope"] == pytest.approx(0.5) and f["intercept"] == pytest.approx(0.5)
    assert f["r2"] == pytest.approx(0.25) and f["pearson_r"] == pytest.approx(0.5)
    assert np.isnan(linear_fit([1, 1, 1], [0, 1, 2])["slope"])
    with pytest.raises(ValueError, match="at least 3 points"):
        linear_fit([0, 1], [0, 1])


def _write_run(d, table, name="results.json"):
    d.mkdir(parents=True)
    (d / name).write_text(json.dumps(table))


def test_report_job_over_runs(tmp_path):
    _write_run(tmp_path / "runs" / "a", {"stages": {"untrained": {"SOP_Score": 0, "online_SR": 0},
                                                    "sft": {"SOP_Score": 0.2, "online_SR": 0.3},
                                                    "semi_online_rl": {"SOP_Score": 0.4, "online_SR": 0.5}},
                                         "profile": {"wall_s": 3.0}})  # the training jobs' layout
    _write_run(tmp_path / "runs" / "b", {"sft": {"SOP_Score": 0.1, "online_SR": 0.2}})
    _write_run(tmp_path / "runs" / "c", {"SOP_Score": 0.3, "online_SR": 0.4}, name="eval.json")
    pts = collect_points([str(tmp_path / "runs" / "*")])
    assert [(p["stage"], p["x"]) for p in pts] == [("sft", 0.2), ("semi_online_rl", 0.4), ("sft", 0.1),
                                                   ("evaluated", 0.3)]
    cfg = tmp_path / "cfg.py"
    cfg.write_text(f"import importlib.util\nspec = importlib.util.spec_from_file_location('r', "
                   f"{str(ROOT / 'configs' / 'sop_report.py')!r})\nm = importlib.util.module_from_spec(spec)\n"
                   f"spec.loader.exec_module(m)\n"
                   f"def get_config():\n    c = m.get_config()\n    c.report.runs = ({str(tmp_path / 'runs' / '*')!r},)\n"
                   f"    c.report.checkpoints = ()\n"
                   f"    return c\n")
    p = subprocess.run([sys.executable, "-m", "gui_jax.main", f"--config={cfg}", f"--workdir={tmp_path / 'out'}"],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    out = json.loads((tmp_path / "out" / "sop_vs_online.json").read_text())
    # the four points lie on y = x + 0.1
    assert out["n"] == 4 and out["slope"] == pytest.approx(1.0) and out["r2"] == pytest.approx(1.0)
    assert "R² = 1.000" in p.stdout and "n = 4 checkpoints" in p.stdout
    assert (tmp_path / "out" / "sop_vs_online.png").stat().st_size > 1000


def test_r2_bootstrap_interval_matches_a_plain_loop():
    from gui_jax.eval.correlation import r2_bootstrap_interval
    assert r2_bootstrap_interval([0, 1, 2, 3, 4], [1, 3, 5, 7, 9], n_boot=200) == pytest.approx((1.0, 1.0))
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, 14)
    y = 0.8 * x + rng.normal(0, 0.1, 14)
    lo, hi = r2_bootstrap_interval(x, y, n_boot=500, seed=5)
    # the same resamples, one at a time through linear_fit
    idx = np.random.default_rng(5).integers(0, 14, size=(500, 14))
    r2 = [linear_fit(x[i], y[i])["r2"] for i in idx if np.ptp(x[i]) > 0 and np.ptp(y[i]) > 0]
    assert (lo, hi) == pytest.approx(tuple(np.quantile(r2, [0.025, 0.975])), abs=1e-12)
    assert lo < linear_fit(x, y)["r2"] < hi


def test_report_evaluates_every_kept_step_once(tmp_path, monkeypatch):
    """report.checkpoints: each kept step of each folder is loaded (that step's weights) and evaluated once;
    a second run reuses the cached points; the fit carries R²'s bootstrap interval and a markdown table."""
    import jax
    import gui_jax.eval.suite as suite
    from gui_jax.jobs import sop_report
    from gui_jax.jobs.common import load_stage_params
    from gui_jax.rl.agent import Agent
    from gui_jax.train.checkpoint import Checkpointer
    from gui_jax.train.state import init_train_state, make_optimizer
    from tests.jobs.test_evaluate_job import tiny_eval_config

    config = tiny_eval_config()
    config.job = "sop_report"
    agent = Agent(config, seed=config.seed)
    folder = tmp_path / "run" / "sft" / "checkpoints"
    ck = Checkpointer(str(folder), max_to_keep=0)
    for step in (10, 20, 30):  # weights shifted by the step: the evaluation can tell which step it got
        shifted = jax.tree.map(lambda x, s=step: x + s, agent.params)
        ck.save(init_train_state(shifted, make_optimizer(1e-3), seed=0), {}, force=True, ckpt_id=step)
    ck.close()
    calls = []

    def fake_evaluate(agent, test_eps, test_tasks, pcfg, config):
        first = float(np.asarray(jax.tree.leaves(agent.params)[0]).ravel()[0])
        calls.append(first)
        return {"SOP_Score": first / 100, "online_SR": first / 200 + 0.1}
    monkeypatch.setattr(suite, "evaluate_agent", fake_evaluate)
    base = float(np.asarray(jax.tree.leaves(agent.params)[0]).ravel()[0])
    import ml_collections
    config.report = ml_collections.ConfigDict({
        "runs": (), "checkpoints": (str(tmp_path / "run" / "*" / "checkpoints"),),
        "x_metric": "SOP_Score", "y_metric": "online_SR", "skip_stages": (), "bootstrap": 100})
    work = tmp_path / "work"
    work.mkdir()
    sop_report.run(config, str(work))
    assert calls == pytest.approx([base + 10, base + 20, base + 30])
    out = json.loads((work / "sop_vs_online.json").read_text())
    assert out["n"] == 3 and out["r2"] == pytest.approx(1.0) and out["slope"] == pytest.approx(0.5)
    assert out["r2_ci95"] == pytest.approx([1.0, 1.0])
    assert sorted(p.name for p in (work / "points").iterdir()) == [f"{sop_report._slug(str(folder))}-{s}"
                                                                   for s in (10, 20, 30)]
    assert json.loads((work / "points" / f"{sop_report._slug(str(folder))}-20" / "eval.json").read_text()
                      )["weights"]["step"] == 20
    assert "over 3 evaluated checkpoints" in (work / "sop_vs_online.md").read_text()
    sop_report.run(config, str(work))          # cached: nothing evaluated again
    assert len(calls) == 3
    # a step folder names that step alone (here already evaluated: nothing runs)
    assert sop_report.evaluate_checkpoints(config, str(work), (str(folder / "20"),)) == [
        str(work / "points" / f"{sop_report._slug(str(folder))}-20")]
    assert len(calls) == 3
    with pytest.raises(Exception, match="no step 15 there"):
        load_stage_params(str(folder), step=15)
