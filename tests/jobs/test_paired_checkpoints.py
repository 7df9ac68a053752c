"""gui_jax/jobs/paired_checkpoints.py: the paired numbers on fabricated per-task outcomes, the report's rows,
and the argument checks that run before any checkpoint is read."""
import pytest

from gui_jax.jobs import paired_checkpoints as pc


def test_greedy_outcomes_paired_on_common_tasks_with_mcnemar():
    outcomes = {
        "sft": {"t0": 0, "t1": 0, "t2": 1, "t3": 0, "t4": 1, "t5": 0},
        "rl": {"t0": 1, "t1": 1, "t2": 1, "t3": 1, "t4": 0, "t6": 1},  # t5 / t6: one side only
    }
    r = pc.paired_against_first(outcomes)["rl vs sft"]
    # 5 common tasks: gained t0, t1, t3; lost t4 → exact McNemar p = 2·P(X ≤ 1), X ~ Bin(4, ½) = 2·5/16
    assert (r["tasks"], r["gained"], r["lost"], r["unpaired"], r["test"]) == (5, 3, 1, 2, "mcnemar")
    assert r["p"] == pytest.approx(0.625)
    assert r["diff"] == pytest.approx((4 - 2) / 5)
    assert r["diff_ci95"][0] <= r["diff"] <= r["diff_ci95"][1]


def test_sampled_rates_use_the_sign_test_and_every_stage_meets_the_first():
    outcomes = {"a": {"x": 0.25, "y": 0.5, "z": 0.0, "w": 1.0},
                "b": {"x": 0.5, "y": 0.5, "z": 0.25, "w": 0.75},
                "c": {"x": 0.25, "y": 0.5, "z": 0.0, "w": 1.0}}
    out = pc.paired_against_first(outcomes)
    assert list(out) == ["b vs a", "c vs a"]
    b = out["b vs a"]
    # rose on x and z, fell on w, tie on y (dropped): p = 2·P(X ≤ 1), X ~ Bin(3, ½) = 1.0
    assert (b["gained"], b["lost"], b["test"], b["p"]) == (2, 1, "sign", 1.0)
    assert b["diff"] == pytest.approx((0.25 + 0.0 + 0.25 - 0.25) / 4)
    c = out["c vs a"]
    assert (c["gained"], c["lost"], c["p"], c["diff"]) == (0, 0, 1.0, 0.0)
    assert pc.paired_against_first(outcomes, test="bootstrap")["b vs a"]["test"] == "bootstrap"


def test_markdown_rows_carry_the_numbers():
    stage = lambda sr, lo, hi: {"online_SR": sr, "online_SR_ci95": [lo, hi], "n": 5, "held_out_vs_checkpoint": None}
    report = {"command": "python -m gui_jax.jobs.paired_checkpoints ...", "held_out_tasks": 5, "trials": 1,
              "temperature": 0.0, "stages": {"sft": stage(0.4, 0.118, 0.769), "rl": stage(0.8, 0.376, 0.964)},
              "paired_vs_first": {"rl vs sft": {"tasks": 5, "gained": 3, "lost": 1, "p": 0.625, "test": "mcnemar",
                                                "diff": 0.4, "diff_ci95": [0.0, 0.8]}}}
    md = pc.markdown(report)
    assert "| sft | 0.400 [0.118, 0.769] | 5 | | | |" in md
    assert "| rl | 0.800 [0.376, 0.964] | 5 | 3 / 1 | +0.400 [+0.000, +0.800] | 0.625 (mcnemar) |" in md
    assert "greedy, Wilson 95 % intervals" in md and "stage rl's run recorded no data split" in md


def test_arguments_are_checked_before_anything_loads(capsys):
    with pytest.raises(ValueError, match="NAME=CHECKPOINT_DIR"):
        pc.parse_stages(["sft"])
    with pytest.raises(ValueError, match="given twice"):
        pc.parse_stages(["a=x", "a=y"])
    with pytest.raises(ValueError, match="whole number, got 'last'"):
        pc.parse_stages(["a=x@last"])
    assert pc.parse_stages(["sft=runs/a@b/sft/checkpoints", "it120=runs/r@1/online/checkpoints@120"]) == [
        ("sft", "runs/a@b/sft/checkpoints", None), ("it120", "runs/r@1/online/checkpoints", 120)]
    for argv, message in ((["--stage", "a=x"], "at least two"),
                          (["--stage", "a=x", "--stage", "b=y", "--trials", "4"], "temperature > 0")):
        with pytest.raises(SystemExit):
            pc.main(["--config", "configs/grpo_online.py", "--out", "unused", *argv])
        assert message in capsys.readouterr().err


def test_a_missing_checkpoint_folder_stops_before_evaluation(tmp_path, capsys):
    argv = ["--config", "configs/grpo_online.py", "--stage", f"a={tmp_path / 'none'}", "--stage", f"b={tmp_path}",
            "--workdir", str(tmp_path / "w"), "--out", str(tmp_path / "out")]
    assert pc.main(argv) == 2
    assert "--stage a=" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_a_step_the_folder_lacks_stops_before_evaluation(tmp_path, capsys):
    ckpts = tmp_path / "run" / "online" / "checkpoints"
    for step in (40, 80):
        (ckpts / str(step)).mkdir(parents=True)
    argv = ["--config", "configs/grpo_online.py", "--stage", f"a={ckpts}@40", "--stage", f"b={ckpts}@120",
            "--workdir", str(tmp_path / "w"), "--out", str(tmp_path / "out")]
    assert pc.main(argv) == 2
    assert f"--stage b={ckpts}: no step 120 there (it holds [40, 80])" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_recipes_without_an_env_block_run_phonesim_in_process(monkeypatch):
    """The quickstart has no env block: its checkpoints are evaluated the way its own job evaluates them."""
    import ml_collections

    from gui_jax.eval import online_success
    seen = {}

    def fake_run(policy, tasks, pcfg, **kw):
        seen.update(kw)
        return [{"task_id": t, "trial": k, "success": s} for t, k, s in
                [("a", 0, True), ("a", 1, False), ("b", 0, True), ("b", 1, True), ("c", 0, False), ("c", 1, False)]]

    monkeypatch.setattr(online_success, "run_online_episodes", fake_run)
    config = ml_collections.ConfigDict({"seed": 3, "data": {"resolution": (112, 252)}, "eval": {"max_steps": 6}})
    agent = type("A", (), {"policy": None})()
    r = pc.evaluate_in_process(agent, ["a", "b", "c"], None, config, temperature=1.0, trials=2)
    assert (seen["resolution"], seen["max_steps"], seen["seed"], seen["trials"]) == ((112, 252), 6, 3, 2)
    assert r["online_success"] == {"a": 0.5, "b": 1.0, "c": 0.0}
    assert (r["online_SR"], r["n"]) == (0.5, 6)
    lo, hi = r["online_SR_ci95"]
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0


def test_one_trial_per_task_gets_the_wilson_interval():
    from gui_jax.eval.metrics import wilson_interval
    from gui_jax.jobs.online_rl import success_summary
    r = success_summary({"a": [1], "b": [0], "c": [1], "d": [1]}, trials=1, temperature=0.0)
    assert r["online_success"] == {"a": 1, "b": 0, "c": 1, "d": 1}
    assert (r["online_SR"], r["n"]) == (0.75, 4)
    assert r["online_SR_ci95"] == list(wilson_interval(3, 4))
