"""Held-out tasks that the start checkpoint's run trained on are counted and reported, not ignored."""
import json

from gui_jax.jobs.common import checkpoint_overlaps, overlap_line, report_checkpoint_overlap, start_training_overlap
from gui_jax.tasks.splits import make_split

TEMPLATES = ("music.play", "clock.alarm_toggle")


def _start_run(tmp_path, **data):
    ckpt = tmp_path / "start" / "sft" / "checkpoints"
    ckpt.mkdir(parents=True)
    cfg = {"seed": 0, "data.split": "instance", "data.train_seed_range": [0, 40],
           "data.test_seed_range": [1000, 1020], "data.templates": list(TEMPLATES), **data}
    (tmp_path / "start" / "config.json").write_text(json.dumps({"quickstart": {"config": cfg}}))
    return str(ckpt)


def test_counts_tasks_from_the_start_runs_training_split(tmp_path, capsys):
    ckpt = _start_run(tmp_path)
    start = make_split("instance", train_seeds=range(0, 40), test_seeds=range(1000, 1020), templates=TEMPLATES)
    tasks = list(start.train[:3]) + list(start.test[:2])  # 3 trained on by the start, 2 held out from it
    out = start_training_overlap(ckpt, tasks)
    assert (out["shared"], out["test_tasks"], out["jobs"]) == (3, 5, ["quickstart"])
    assert out["shared_task_ids"] == sorted(t.task_id for t in start.train[:3])
    report_checkpoint_overlap(ckpt, tasks)
    assert capsys.readouterr().out.startswith("warning: 3 of 5 held-out tasks share an instance with the training "
                                              "split of the start checkpoint's run")
    assert start_training_overlap(ckpt, list(start.test))["shared"] == 0


def test_unknown_without_a_config_snapshot(tmp_path):
    bare = tmp_path / "bare" / "sft" / "checkpoints"
    bare.mkdir(parents=True)
    assert start_training_overlap(str(bare), []) is None
    assert "unknown" in overlap_line(None)


def test_verifier_and_self_improve_report_overlap_for_each_checkpoint(tmp_path, capsys):
    from gui_jax.jobs import verifier_eval as ve
    from gui_jax.jobs.self_improve import write_results as si_write
    ckpt = _start_run(tmp_path)
    start = make_split("instance", train_seeds=range(0, 40), test_seeds=range(1000, 1020), templates=TEMPLATES)
    tasks = list(start.train[:2]) + list(start.test[:3])
    bare = tmp_path / "bare" / "rm" / "checkpoints"
    bare.mkdir(parents=True)
    out = checkpoint_overlaps(tasks, policy=ckpt, reward_model=str(bare), other="")
    assert list(out) == ["held_out_vs_policy", "held_out_vs_reward_model"]        # "" = no checkpoint
    assert out["held_out_vs_policy"]["shared"] == 2 and out["held_out_vs_reward_model"] is None
    printed = capsys.readouterr().out
    assert "warning: 2 of 5 held-out tasks share an instance with the training split of the policy checkpoint's run" \
        in printed and "the reward model checkpoint's run recorded no data split" in printed
    summary = {"task_ids": [t.task_id for t in tasks], "by_n": {"1": {
        "n": 1, "successes": 0, "episodes": 5, "SR": 0.0, "ci95": [0.0, 0.43], "success": [0] * 5, "steps": [1] * 5,
        "lost_vs_n1": 0, "gained_vs_n1": 0, "mcnemar_p_vs_n1": 1.0}}}
    saved = ve.write_results(summary, str(tmp_path), extra=out)
    assert saved["held_out_vs_policy"]["shared_task_ids"] == sorted(t.task_id for t in start.train[:2])
    md = (tmp_path / "results.md").read_text()
    assert ("2 of 5 held-out tasks share an instance with the training split of the policy checkpoint's run "
            f"({tmp_path / 'start'})") in md and "reward model checkpoint's run recorded no data split" in md
    # self-improvement rounds carry the same lines
    (tmp_path / "si" / "round_0").mkdir(parents=True)
    (tmp_path / "si" / "round_0" / "eval.json").write_text(json.dumps(
        {"task_ids": summary["task_ids"], "success": [0] * 5, "steps": [1] * 5}))
    si_write(str(tmp_path / "si"), 0, dict(out))
    assert "policy checkpoint's run" in (tmp_path / "si" / "results.md").read_text()
