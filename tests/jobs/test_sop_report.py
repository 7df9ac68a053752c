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
                   f"    return c\n")
    p = subprocess.run([sys.executable, "-m", "gui_jax.main", f"--config={cfg}", f"--workdir={tmp_path / 'out'}"],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    out = json.loads((tmp_path / "out" / "sop_vs_online.json").read_text())
    # the four points lie on y = x + 0.1
    assert out["n"] == 4 and out["slope"] == pytest.approx(1.0) and out["r2"] == pytest.approx(1.0)
    assert "R² = 1.000" in p.stdout and "n = 4 checkpoints" in p.stdout
    assert (tmp_path / "out" / "sop_vs_online.png").stat().st_size > 1000
