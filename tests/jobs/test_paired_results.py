"""gui_jax/jobs/paired_results.py: runs' own per-task outcomes pooled over seeds and paired arm against arm,
overall, per seed and per template, with exact numbers on fabricated results files; bad arguments named."""
import json

import pytest

from gui_jax.jobs import paired_results as pr


def _run(tmp_path, name, stages):
    """A run folder whose results.json holds `stages` ({stage: {task id: 0/1}}), as the quickstart writes it:
    outcomes a list aligned with online_task_ids."""
    folder = tmp_path / name
    folder.mkdir()
    body = {s: {"online_SR": sum(o.values()) / len(o), "online_task_ids": list(o), "online_success": list(o.values())}
            for s, o in stages.items()}
    (folder / "results.json").write_text(json.dumps({"stages": body}))
    return str(folder)


def _arms(tmp_path):
    a0 = _run(tmp_path, "a0", {"sft": {"x#1": 0, "y#1": 0}, "rl": {"x#1": 1, "x#2": 1, "y#1": 0, "y#2": 1}})
    a1 = _run(tmp_path, "a1", {"sft": {"x#1": 1}, "rl": {"x#1": 0, "x#2": 1, "y#1": 1, "y#2": 1}})
    b0 = _run(tmp_path, "b0", {"rl": {"x#1": 1, "x#2": 0, "y#1": 1, "y#2": 1}})
    b1 = _run(tmp_path, "b1", {"rl": {"x#1": 1, "x#2": 1, "y#1": 1, "y#2": 1}})
    return a0, a1, b0, b1


def test_seeds_pool_as_kth_run_against_kth_run(tmp_path):
    a0, a1, b0, b1 = _arms(tmp_path)
    report = pr.compare(pr.parse_arms([f"base={a0},{a1}", f"cand={b0},{b1}"]))
    assert report["stages"] == {"base": ["rl", "rl"], "cand": ["rl", "rl"]}   # each run's last stage
    assert sorted(report["outcomes"]["base"]) == ["0:x#1", "0:x#2", "0:y#1", "0:y#2",
                                                  "1:x#1", "1:x#2", "1:y#1", "1:y#2"]
    assert report["arms"]["base"]["online_SR"] == pytest.approx(6 / 8)
    assert report["arms"]["cand"]["online_SR"] == pytest.approx(7 / 8)
    # pooled: gained 0:y#1 and 1:x#1, lost 0:x#2 -> exact McNemar 2·P(X ≤ 1 | Bin(3, ½)) = 1.0
    overall = report["paired_vs_first"]["cand vs base"]
    assert (overall["tasks"], overall["gained"], overall["lost"], overall["p"]) == (8, 2, 1, 1.0)
    seed0 = report["by_seed"][0]["paired_vs_first"]["cand vs base"]
    assert (seed0["gained"], seed0["lost"]) == (1, 1)
    x = report["by_template"]["x"]
    assert x["arms"]["base"]["n"] == 4 and x["arms"]["cand"]["online_SR"] == pytest.approx(3 / 4)
    assert (x["paired_vs_first"]["cand vs base"]["gained"], x["paired_vs_first"]["cand vs base"]["lost"]) == (1, 1)
    y = report["by_template"]["y"]["paired_vs_first"]["cand vs base"]
    assert (y["gained"], y["lost"], y["diff"]) == (1, 0, pytest.approx(1 / 4))


def test_a_named_stage_and_dict_outcomes(tmp_path):
    a0, _, b0, _ = _arms(tmp_path)
    folder = tmp_path / "c0"
    folder.mkdir()   # paired_checkpoints writes outcomes as {task: 0/1}
    (folder / "results.json").write_text(json.dumps({"stages": {"it120": {"online_success": {"x#1": 1, "y#1": 1}}}}))
    report = pr.compare(pr.parse_arms([f"sft={a0}@sft", f"later={folder / 'results.json'}"]))
    assert report["stages"] == {"sft": ["sft"], "later": ["it120"]}
    t = report["paired_vs_first"]["later vs sft"]
    assert (t["tasks"], t["gained"], t["lost"]) == (2, 2, 0)


def test_markdown_rows_and_files(tmp_path, capsys):
    a0, a1, b0, b1 = _arms(tmp_path)
    out = tmp_path / "out" / "cmp"
    assert pr.main(["--arm", f"base={a0},{a1}", "--arm", f"cand={b0},{b1}", "--out", str(out)]) == 0
    md = (tmp_path / "out" / "cmp.md").read_text()
    assert "| all | base | 0.750 [0.409, 0.929] | 8 | | | |" in md
    assert "| all | cand | 0.875 [0.529, 0.978] | 8 | 2 / 1 | +0.125" in md and "| 1 (mcnemar) |" in md
    assert "| run 1 | cand |" in md and "| y | cand | 1.000" in md
    saved = json.loads((tmp_path / "out" / "cmp.json").read_text())
    assert saved["outcomes"]["cand"]["1:x#2"] == 1 and saved["command"].startswith("python -m gui_jax.jobs.paired_")


@pytest.mark.parametrize("arms, message", [
    (["base"], "expected NAME=RUN"),
    (["a={a0}", "a={b0}"], "given twice"),
    (["a={a0},{a1}", "b={b0}"], "1 runs, the first arm \\(a\\) has 2"),
    (["a={a0}@ppo", "b={b0}"], "no stage 'ppo' \\(it has sft, rl\\)"),
    (["a={missing}", "b={b0}"], "no such results file"),
])
def test_bad_arms_are_named(tmp_path, arms, message):
    a0, a1, b0, _ = _arms(tmp_path)
    paths = {"a0": a0, "a1": a1, "b0": b0, "missing": str(tmp_path / "nowhere")}
    with pytest.raises(ValueError, match=message):
        pr.compare(pr.parse_arms([a.format(**paths) for a in arms]))


def test_one_arm_is_an_error_not_a_report(tmp_path, capsys):
    a0, *_ = _arms(tmp_path)
    assert pr.main(["--arm", f"a={a0}", "--out", str(tmp_path / "x")]) == 2
    assert "at least two --arm" in capsys.readouterr().err
