"""The pretrain job through the CLI: a run killed with -9 and resumed continues the same loss curve as an
uninterrupted one (the stream's position and the optimizer state come back), and the shipped base's card
command reproduces the card's first 20 logged losses."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
CARD = REPO / "gui_jax" / "models" / "assets" / "builtin" / "tiny_base" / "README.md"
TINY = ["--config.model.num_hidden_layers=1", "--config.pretrain.batch_size=2", "--config.pretrain.micro_batch_size=2",
        "--config.pretrain.curriculum=4-5@0:3,5-6@1", "--config.pretrain.num_steps=6",
        "--config.pretrain.checkpoint_every=2", "--config.pretrain.eval_every=6", "--config.pretrain.eval_items=4",
        "--config.pretrain.warmup_steps=1", "--config.pretrain.row_length=256", "--config.pretrain.data_threads=0"]


def _env() -> dict:
    """The jobs' environment: the suite's XLA compilation cache (tests/conftest.py) comes with os.environ."""
    return dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu")


def _command(workdir: Path, extra=()) -> list[str]:
    return [sys.executable, "-m", "gui_jax.main", "--config=configs/pretrain_tiny.py", f"--workdir={workdir}",
            *extra]


def _losses(workdir: Path) -> dict[int, float]:
    out = {}
    for line in (workdir / "metrics.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["name"] == "pretrain/loss":
            out[r["step"]] = r["value"]
    return out


def _run(cmd, env, timeout=900):
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]


def test_kill9_then_resume_continues_the_same_loss_curve(tmp_path):
    env = _env()
    ref, resumed = tmp_path / "ref", tmp_path / "resumed"
    _run(_command(ref, TINY), env)
    proc = subprocess.Popen(_command(resumed, TINY), cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    ckpts, deadline = resumed / "checkpoints", time.time() + 900
    try:
        while not (ckpts.is_dir() and any(p.name.isdigit() for p in ckpts.iterdir())):
            assert proc.poll() is None and time.time() < deadline, "no checkpoint before the run ended"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    killed_at = max(int(p.name) for p in ckpts.iterdir() if p.name.isdigit())
    assert killed_at < 6, f"the kill came after the run finished ({killed_at})"
    _run(_command(resumed, TINY), env)
    a, b = _losses(ref), _losses(resumed)
    assert sorted(a) == sorted(b) == list(range(1, 7))
    np.testing.assert_allclose([b[s] for s in range(1, 7)], [a[s] for s in range(1, 7)], rtol=1e-5)
    assert (resumed / "base" / "README.md").exists() and (resumed / "base" / "model.safetensors").exists()


def test_card_command_reproduces_the_cards_first_losses(tmp_path):
    """The card lists the exact command and the losses of updates 1-20; rerunning 20 updates of it gives them
    back within 2e-3 relative (float summation order differs with micro-batching and XLA version)."""
    from gui_jax.jobs.pretrain import card_phases
    scratch = [p for p in card_phases(CARD.read_text()) if "from random weights" in p.splitlines()[0]]
    assert len(scratch) == 1   # the phase that started from random weights is the one a rerun reproduces
    text = scratch[0]
    command = re.search(r"Command: `python -m gui_jax.main --config configs/pretrain_tiny.py --workdir <dir>(.*?)`",
                        text).group(1).split()
    card_losses = [float(x) for x in re.search(r"reproduction check\): (.*)", text).group(1).split(", ")]
    assert len(card_losses) == 20
    # the card's num_steps stays: the learning-rate schedule (e.g. wsd's anneal) is the card's
    overrides = [c for c in command if not c.startswith(("--config.model.checkpoint", "--config.pretrain.first_step"))]
    p = subprocess.run(_command(tmp_path / "w", [*overrides, "--config.pretrain.stop_after_steps=20",
                                                 "--config.pretrain.eval_items=4", "--config.pretrain.eval_every=1000"]),
                       cwd=REPO, env=_env(), capture_output=True, text=True, timeout=900)
    assert "stopped after 20 steps as configured" in p.stderr, p.stderr[-3000:]   # the knob's (non-zero) exit
    got = _losses(tmp_path / "w")
    np.testing.assert_allclose([got[s] for s in range(1, 21)], card_losses, rtol=2e-3)


def test_card_phases_keep_the_provenance_of_a_continued_run():
    from gui_jax.jobs.pretrain import card_phases
    one = "# base\n\n## How it was made\n- Command: `a`\n- Losses of updates 1-20 (reproduction check): 1.0\n\n## Reading\nx"
    assert card_phases(one) == ["### Phase 1 (from random weights)\n- Command: `a`\n"
                                "- Losses of updates 1-20 (reproduction check): 1.0"]
    two = ("# base\n\n## How it was made\n" + card_phases(one)[0] + "\n\n### Phase 2 (updates 2,028-3,000, from the "
           "update-2,027 snapshot `builtin:tiny-base`)\n- Command: `b`\n\n## Reading accuracy\n| x |")
    got = card_phases(two)
    assert [p.splitlines()[0] for p in got] == ["### Phase 1 (from random weights)",
                                                "### Phase 2 (updates 2,028-3,000, from the update-2,027 snapshot "
                                                "`builtin:tiny-base`)"]
    assert got[1].endswith("- Command: `b`") and card_phases("# no provenance") == []


def test_card_of_a_continued_run_lists_the_snapshot_phases_first(tmp_path):
    import json

    from gui_jax.core.recipe_files import recipe_config
    from gui_jax.jobs.pretrain import card_phases, model_card
    config = recipe_config(str(REPO / "configs" / "pretrain_tiny.py"))
    config.model.checkpoint, config.pretrain.first_step = "builtin:tiny-base", 2027
    with open(tmp_path / "metrics.jsonl", "w") as f:
        for step in range(2028, 2031):
            f.write(json.dumps({"name": "pretrain/loss", "step": step, "value": 0.5}) + "\n")
    card = model_card(config, str(tmp_path), {"steps": 2030, "reading_n": {}})
    phases = card_phases(card)
    assert phases[:-1] == card_phases(CARD.read_text())   # the shipped snapshot's own provenance, unchanged
    assert phases[-1].splitlines()[0] == (f"### Phase {len(phases)} (updates 2,028-2,030, from the update-2,027 "
                                          "snapshot `builtin:tiny-base`)")
    assert "- Losses of updates 2028-2030 (reproduction check): 0.5000, 0.5000, 0.5000" in phases[-1]
    assert "- Updates: 3 of batch 32 items" in phases[-1]


def test_card_of_a_run_loaded_from_a_snapshot_without_first_step_keeps_its_provenance(tmp_path):
    """A run that loads a snapshot but restarts the update count (first_step 0, a new schedule and curriculum)
    still continues it: the card lists the snapshot's phases and never claims random weights for its own."""
    import json

    from gui_jax.core.recipe_files import recipe_config
    from gui_jax.jobs.pretrain import card_phases, model_card
    config = recipe_config(str(REPO / "configs" / "pretrain_tiny.py"))
    config.model.checkpoint = "builtin:tiny-base"
    with open(tmp_path / "metrics.jsonl", "w") as f:
        for step in (1, 2):
            f.write(json.dumps({"name": "pretrain/loss", "step": step, "value": 0.25}) + "\n")
    phases = card_phases(model_card(config, str(tmp_path), {"steps": 2, "reading_n": {}}))
    assert phases[:-1] == card_phases(CARD.read_text())
    assert phases[-1].splitlines()[0] == f"### Phase {len(phases)} (updates 1-2, from the snapshot `builtin:tiny-base`)"
    assert sum("from random weights" in p.splitlines()[0] for p in phases) == 1


def test_wall_time_budget_ends_with_an_evaluated_exported_base(tmp_path, monkeypatch):
    """pretrain.max_minutes ends the run between two evaluations: the reading evaluation runs at the step
    reached and the base is exported, so a short lease leaves a usable result (the clock is faked: one second
    per reading in fit, so the run stops at update 3 of 6 exactly)."""
    import itertools

    from gui_jax.jobs import load_config
    from gui_jax.jobs import pretrain as pretrain_job
    from gui_jax.train import fit as fit_module
    overrides = {flag.split("=")[0].removeprefix("--config."): flag.split("=")[1] for flag in TINY}
    overrides = {k: int(v) if v.isdigit() else v for k, v in overrides.items()}
    config = load_config(str(REPO / "configs" / "pretrain_tiny.py"), **overrides,
                         **{"pretrain.max_minutes": 3.5 / 60})
    ticks = itertools.count()
    monkeypatch.setattr(fit_module, "time", type("Clock", (), {"time": staticmethod(lambda: float(next(ticks)))}))
    pretrain_job.run(config, str(tmp_path / "w"))
    result = json.loads((tmp_path / "w" / "results.json").read_text())
    assert result["steps"] == 3 and result["eval_step"] == 3
    assert set(result["reading"]) and all(0.0 <= v <= 1.0 for v in result["reading"].values())
    assert (tmp_path / "w" / "base" / "model.safetensors").exists()
    card = (tmp_path / "w" / "base" / "README.md").read_text()
    assert "(updates 1-3," in card and "measured at update 3." in card


def test_the_two_head_copy_recipe_runs_through_the_job_and_logs_its_terms(tmp_path):
    """The copy levers reach the job: the two-head copy layout with the reading hops (toggle items pointed too),
    copy readouts scaled by the residual (the digits' and a read value's), and the answer term are trained and logged (finite, the answer term
    near the digit prior after two updates), and so is the circuit (each hop's rate); a bad readout_scale, and a
    value readout without the read_match hop, are named before any model is built."""
    import pytest

    from gui_jax.config_check import RunError
    from gui_jax.jobs import load_config
    from gui_jax.jobs import pretrain as pretrain_job
    overrides = {flag.split("=")[0].removeprefix("--config."): flag.split("=")[1] for flag in TINY}
    overrides = {k: int(v) if v.isdigit() else v for k, v in overrides.items()}
    overrides.update({"model.num_hidden_layers": 3, "pretrain.num_steps": 2, "pretrain.eval_every": 2,
                      "pretrain.mix": "tap:1,read:1,toggle:1", "pretrain.toggle_pointers": True,
                      "pretrain.app_pages": 0.5, "pretrain.pointer_weight": 1.0,
                      "pretrain.index_readout_weight": 1.0, "pretrain.value_readout_weight": 1.0,
                      "pretrain.pointer_layout": "index_first=0.0,label_bag=0.1,goal=0.1,index_next=0.2,"
                                                 "match_first=1.0,row=1.1,prev_token=1.2,match_next=1.3,read_match=2.0",
                      "pretrain.answer_weight": 1.0, "pretrain.readout_scale": "residual",
                      "pretrain.circuit_items": 2})
    pretrain_job.run(load_config(str(REPO / "configs" / "pretrain_tiny.py"), **overrides), str(tmp_path / "w"))
    assert ", toggle items too" in (tmp_path / "w" / "base" / "README.md").read_text()
    logged = {}
    for line in (tmp_path / "w" / "metrics.jsonl").read_text().splitlines():
        r = json.loads(line)
        logged.setdefault(r["name"].removeprefix("pretrain/"), []).append(r["value"])
    for name in ("answer_nll", "pointer_ce_match_first", "pointer_ce_match_next", "pointer_ce_index_next",
                 "pointer_ce_readout_match_first", "pointer_ce_readout_match_next", "pointer_ce_read_match",
                 "pointer_ce_readout_read_match"):
        assert len(logged[name]) == 2 and all(np.isfinite(logged[name])), name
    # the circuit at the evaluation (update 2): every hop of the layout scored on 2 tap + 2 read items
    for hop in ("goal", "index_first", "index_next", "label_bag", "match_first", "match_next", "row", "prev_token",
                "read_match", "match_first:first", "match_first:next_token", "read_match:first"):
        assert len(logged[f"circuit/{hop}"]) == 1 and 0.0 <= logged[f"circuit/{hop}"][0] <= 1.0, hop
    # a value token from random weights: about ln(4096) = 8.3 over the tiny vocabulary
    assert 5.0 < logged["pointer_ce_readout_read_match"][0] < 12.0
    assert 1.0 < logged["answer_nll"][-1] < 12.0      # digits from random weights: ~ln(vocab) at most
    overrides["pretrain.readout_scale"] = "norm"
    with pytest.raises(RunError, match="pretrain.readout_scale 'norm': one of own, residual"):
        pretrain_job.run(load_config(str(REPO / "configs" / "pretrain_tiny.py"), **overrides), str(tmp_path / "x"))
    overrides.update({"pretrain.readout_scale": "residual", "pretrain.pointer_layout": "index_first=0.0,match=1.0"})
    with pytest.raises(RunError, match="value_readout_weight 1.0 reads out the read_match hop: it needs"):
        pretrain_job.run(load_config(str(REPO / "configs" / "pretrain_tiny.py"), **overrides), str(tmp_path / "y"))
    with pytest.raises(RunError, match="pretrain.toggle_pointers adds the tap hops to toggle items: it needs "
                                       "pretrain.pointer_weight > 0 \\(got 0.0\\)"):
        pretrain_job.run(load_config(str(REPO / "configs" / "pretrain_tiny.py"), **{
            "pretrain.toggle_pointers": True}), str(tmp_path / "z"))
    with pytest.raises(RunError, match="pretrain.num_steps 20 is not above pretrain.first_step 20: nothing to train"):
        pretrain_job.run(load_config(str(REPO / "configs" / "pretrain_tiny.py"), **{
            "pretrain.num_steps": 20, "pretrain.first_step": 20}), str(tmp_path / "v"))
    assert not (tmp_path / "v").exists()                # stopped before writing anything


def test_a_grown_snapshot_continues_with_the_same_loss_and_says_so_in_its_card(tmp_path):
    """pretrain.grow_from: a snapshot grown to more layers, a wider MLP and more key/value heads
    (models/qwen2_5_vl/grow.py) starts
    where the snapshot is: its first loss equals the snapshot's own continuation on the same batch (same
    first_step and seed); the card says what it grew from; bad combinations are one-line errors."""
    import pytest

    from gui_jax.config_check import RunError
    from gui_jax.jobs import load_config
    from gui_jax.jobs import pretrain as pretrain_job
    overrides = {flag.split("=")[0].removeprefix("--config."): flag.split("=")[1] for flag in TINY}
    overrides = {k: int(v) if v.isdigit() else v for k, v in overrides.items()}
    overrides.update({"pretrain.num_steps": 2, "pretrain.eval_every": 2, "pretrain.export_dtype": ""})
    recipe = str(REPO / "configs" / "pretrain_tiny.py")
    pretrain_job.run(load_config(recipe, **overrides), str(tmp_path / "small"))
    snapshot = str(tmp_path / "small" / "base")
    more = dict(overrides, **{"pretrain.first_step": 2, "pretrain.num_steps": 3})
    pretrain_job.run(load_config(recipe, **more, **{"model.checkpoint": snapshot}), str(tmp_path / "same"))
    pretrain_job.run(load_config(recipe, **dict(more, **{"model.num_hidden_layers": 2}),
                                 **{"model.intermediate_size": 512, "model.num_key_value_heads": 4,
                                    "pretrain.grow_from": snapshot}),
                     str(tmp_path / "grown"))
    same, grown = _losses(tmp_path / "same"), _losses(tmp_path / "grown")
    assert list(same) == list(grown) == [3]
    assert grown[3] == pytest.approx(same[3], rel=1e-5) and grown[3] > 0.1
    card = (tmp_path / "grown" / "base" / "README.md").read_text()
    assert f"from the update-2 snapshot `{snapshot}`, grown to 2 layers, MLP width 512, 4 key/value heads)" in card
    exported = (tmp_path / "grown" / "base" / "config.json").read_text()
    assert '"num_hidden_layers": 2' in exported and '"num_key_value_heads": 4' in exported
    with pytest.raises(RunError, match="model.checkpoint must then be ''"):
        pretrain_job.run(load_config(recipe, **more, **{"model.checkpoint": snapshot, "pretrain.grow_from": snapshot}),
                         str(tmp_path / "both"))
    with pytest.raises(RunError, match=r"pretrain.grow_from .*: cannot grow .*down_proj.*\(384, 128\) -> \(256, 128\)"):
        pretrain_job.run(load_config(recipe, **more, **{"model.intermediate_size": 256,
                                                        "pretrain.grow_from": snapshot}), str(tmp_path / "narrower"))
