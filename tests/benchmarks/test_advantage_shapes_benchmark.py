"""benchmarks/advantage_shapes.py: every batch has its own step count, and the JSON carries both paths' times."""
import json

from benchmarks import advantage_shapes


def test_batches_have_distinct_counts_in_the_quickstarts_range():
    batches = advantage_shapes.rollout_batches(12)
    counts = [len(b[0]) for b in batches]
    assert len(set(counts)) == 12 and all(180 <= c <= 400 for c in counts)
    for rewards, traj, step, group, mismatch in batches:
        assert (group == traj // 4).all() and (step[traj == traj[0]] == range((traj == traj[0]).sum())).all()


def test_json_has_both_paths_and_the_ratio(tmp_path):
    out = advantage_shapes.main(["--batches", "3", "--repeats", "1", "--json", str(tmp_path / "a.json")])
    stored = json.loads((tmp_path / "a.json").read_text())
    assert stored["speedup"] == out["median_s"]["unbucketed"] / out["median_s"]["bucketed"]
    assert len(stored["seconds"]["bucketed"]) == len(stored["seconds"]["unbucketed"]) == 1
    assert len(stored["load_average_before"]) == 3 and stored["batches"] == 3
