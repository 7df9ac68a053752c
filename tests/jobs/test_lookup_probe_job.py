"""The lookup_probe job through main: its curve lands in results.json, metrics.jsonl and the plot; a bad probe
field is one line naming it."""
import json
import subprocess
import sys

SMALL = ["--config.probe.steps=4", "--config.probe.eval_every=2", "--config.probe.layers=1", "--config.probe.lines=8",
         "--config.probe.match_layer=-1", "--config.probe.warmup=1",
         "--config.probe.hidden=32", "--config.probe.heads=2", "--config.probe.kv_heads=1",
         "--config.probe.batch=4", "--config.probe.eval_screens=64", "--config.probe.curriculum=2:2", "--config.probe.queries=2"]


def _main(tmp_path, *flags):
    return subprocess.run([sys.executable, "-m", "gui_jax.main", "--config=configs/lookup_probe.py",
                           f"--workdir={tmp_path / 'out'}", *flags], capture_output=True, text=True, timeout=600)


def test_job_writes_the_curve_everywhere(tmp_path):
    p = _main(tmp_path, *SMALL)
    assert p.returncode == 0, p.stderr[-2000:]
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    curve = result["curve"]
    assert [c["step"] for c in curve] == [2, 4] and [c["lines"] for c in curve] == [2, 8]
    assert result["config"]["layers"] == 1 and result["chance"] == 0.125
    logged = {}
    for line in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines():
        rec = json.loads(line)
        logged.setdefault(rec["step"], {})[rec["name"]] = rec["value"]
    for c in curve:
        assert abs(logged[c["step"]]["probe/held_out_acc"] - c["held_out_acc"]) < 1e-9
    assert (tmp_path / "out" / "training_curves.png").stat().st_size > 1000
    assert f"held-out accuracy {curve[-1]['held_out_acc']:.3f}" in p.stdout


def test_bad_probe_field_is_one_line(tmp_path):
    p = _main(tmp_path, *SMALL, "--config.probe.order=sideways")
    assert p.returncode != 0
    assert "order 'sideways' unknown" in p.stderr and "Traceback" not in p.stderr, p.stderr[-2000:]
