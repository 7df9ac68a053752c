"""Sweeps: grid × zip × seeds expansion, validation before anything runs, resume after a kill, summary."""
import csv
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import ml_collections
import pytest

from gui_jax import sweep as gs

ROOT = pathlib.Path(__file__).resolve().parents[1]
QUICKSTART = str(ROOT / "configs" / "quickstart.py")
DEMO = str(ROOT / "configs" / "sweeps" / "quick_demo.py")


def _cfg():
    return ml_collections.ConfigDict({"seed": 0, "rl": {"gamma": 0.5, "omega": 1.0, "seed": 0},
                                      "sft": {"num_steps": 5}})


def test_grid_zip_seed_expansion():
    sw = gs.parse_sweep({"grid": {"rl.gamma": [0, 0.5]}, "zip": {"rl.omega": [0, 1], "sft.num_steps": [1, 2]},
                         "seeds": [0, 1, 2], "metrics": ["online_SR"]}, _cfg())
    assert len(sw.points) == 2 * 2 * 3
    assert sw.points[0].flags == (("rl.gamma", 0), ("rl.omega", 0), ("sft.num_steps", 1))
    assert sw.points[3].flags == (("rl.gamma", 0), ("rl.omega", 1), ("sft.num_steps", 2))
    assert [p.seed for p in sw.points[:3]] == [0, 1, 2]
    assert len({p.dirname for p in sw.points}) == 12


@pytest.mark.parametrize("spec,needle", [
    ({"grid": {"rl.gama": [0]}, "metrics": ["m"]}, "'rl.gama'; did you mean rl.gamma"),
    ({"grdi": {"rl.gamma": [0]}, "metrics": ["m"]}, "unknown sweep key(s) ['grdi']"),
    ({"grid": {"rl.gamma": 0.5}, "metrics": ["m"]}, "grid['rl.gamma'] must be a non-empty list"),
    ({"zip": {"rl.gamma": [0, 1], "rl.omega": [0]}, "metrics": ["m"]}, "zip lists must have equal lengths"),
    ({"grid": {"rl.gamma": [0]}}, "'metrics' must name at least one"),
    ({"grid": {"rl.gamma": [0]}, "seeds": ["a"], "metrics": ["m"]}, "'seeds' must be a list of ints"),
    ({"grid": {"rl.gamma": [0]}, "overrides": {"rl.gamma": 1}, "metrics": ["m"]}, "more than one of"),
])
def test_malformed_sweeps_name_the_bad_key(spec, needle):
    with pytest.raises(gs.SweepError) as e:
        gs.parse_sweep(spec, _cfg())
    assert needle in str(e.value)


def test_malformed_sweep_file_fails_before_running(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def get_sweep():\n    return {'grid': {'rl.gamme': [0, 1]}, 'metrics': ['online_SR']}\n")
    p = subprocess.run([sys.executable, "-m", "gui_jax.sweep", f"--config={QUICKSTART}", f"--sweep={bad}",
                        f"--workdir={tmp_path / 'w'}"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 2
    assert "the recipe has no field 'rl.gamme'; did you mean rl.gamma" in p.stderr
    assert not (tmp_path / "w").exists()


def test_t_interval_hand_values():
    mean, std, half = gs.t_interval([0.2, 0.4])
    assert mean == pytest.approx(0.3) and std == pytest.approx(0.141421356, rel=1e-6)
    assert half == pytest.approx(12.706 * 0.141421356 / 2 ** 0.5, rel=1e-6)
    assert gs.t_interval([0.7]) == (0.7, 0.0, 0.0)


def _run_sweep(tmp_path, env, **kw):
    return subprocess.Popen([sys.executable, "-m", "gui_jax.sweep", f"--config={QUICKSTART}", f"--sweep={DEMO}",
                             f"--workdir={tmp_path / 'w'}", "--module=fake_sweep_job", "--parallel=1"],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kw)


def test_sweep_survives_a_kill_and_finishes_only_missing_points(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "support"), str(ROOT)]))
    sw = gs.parse_sweep(gs._load_module_fn(DEMO, "get_sweep"), gs._load_module_fn(QUICKSTART, "get_config"))
    assert len(sw.points) == 8
    slow = sw.points[3].dirname
    env["SWEEP_TEST_SLOW_POINT"] = slow
    proc = _run_sweep(tmp_path, env)
    log = tmp_path / "w" / "invocations.log"
    deadline = time.time() + 60
    while time.time() < deadline and not (log.exists() and slow in log.read_text()):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and the point it is running die together
    proc.wait()
    first = log.read_text().split()
    assert first == [p.dirname for p in sw.points[:4]]
    assert [gs.is_done(str(tmp_path / "w"), p) for p in sw.points] == [True] * 3 + [False] * 5

    env.pop("SWEEP_TEST_SLOW_POINT")
    proc = _run_sweep(tmp_path, env)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "8 points, 3 finished, 5 to run" in out
    assert log.read_text().split()[4:] == [p.dirname for p in sw.points[3:]]

    rows = list(csv.DictReader(open(tmp_path / "w" / "summary.csv")))
    assert len(rows) == 4 and all(r["n"] == "2" for r in rows)
    got = {r["point"]: float(r["online_SR"]) for r in rows}
    # mean over seeds 0 and 1 of 0.1·γ + 0.2·ω + 0.01·seed
    assert got["rl.gamma=0.5,rl.omega=1.0"] == pytest.approx(0.05 + 0.2 + 0.005)
    assert got["rl.gamma=0.0,rl.omega=0.0"] == pytest.approx(0.005)
    assert (tmp_path / "w" / "summary.png").stat().st_size > 1000
    assert "± 0.007" in (tmp_path / "w" / "summary.md").read_text()  # std of {x, x + 0.01}


def test_commands_only_writes_one_line_per_point(tmp_path):
    p = subprocess.run([sys.executable, "-m", "gui_jax.sweep", f"--config={QUICKSTART}", f"--sweep={DEMO}",
                        f"--workdir={tmp_path / 'w'}", "--commands_only"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    lines = [l for l in (tmp_path / "w" / "commands.sh").read_text().splitlines() if not l.startswith("#")]
    assert len(lines) == 8 and all("--point=" in l for l in lines)


def test_every_shipped_sweep_file_parses_against_quickstart():
    cfg = gs._load_module_fn(QUICKSTART, "get_config")
    needs = {"ui_s1_patch_strategy.py": {"rl.patch_aux_checkpoint": "/models/aux"}}  # what its docstring asks
    for path in sorted((ROOT / "configs" / "sweeps").glob("*.py")):
        sw = gs.parse_sweep(gs._load_module_fn(str(path), "get_sweep"), cfg, needs.get(path.name))
        assert len(sw.points) >= 2, path.name


def test_a_point_breaking_a_cross_field_rule_stops_the_sweep_before_anything_runs():
    config = gs._load_module_fn(QUICKSTART, "get_config")
    spec = {"grid": {"rl.patch_strategy": ["thought_free", "off_policy"]}, "metrics": ["online_SR"]}
    with pytest.raises(gs.SweepError, match=r"point rl.patch_strategy=off_policy: config.rl.patch_aux_checkpoint"):
        gs.parse_sweep(spec, config)
    assert len(gs.parse_sweep(spec, config, {"rl.patch_aux_checkpoint": "/models/aux"}).points) == 2
    assert gs.main(["--config", QUICKSTART, "--sweep", str(ROOT / "configs/sweeps/ui_s1_patch_strategy.py"),
                    "--dry_run", "--workdir", "/tmp/gui_jax_sweep_check"]) == 2   # stopped: no --set
