"""AWG few-shot adaptation (jobs/few_shot.py): which demonstrations each unseen app gets, and that each mode
adapts the very start the zero-shot row evaluates."""
import json

import pytest

from gui_jax.jobs import load_config
from gui_jax.jobs.few_shot import demo_tasks


def _config(**fields):
    return load_config("configs/few_shot.py", **{
        "model.checkpoint": "", "model.num_hidden_layers": 1, "model.max_new_tokens": 16,
        "data.templates": ("music.play", "clock.alarm_toggle", "contacts.favorite", "calendar.event_time"),
        "data.difficulties": ("easy",), "data.num_train_episodes": 4, "data.num_test_episodes": 6,
        "sft.num_steps": 2, "sft.batch_size": 4, "sft.micro_batch_size": 4, "eval.max_steps": 3,
        "few_shot.k": 2, **fields})


def test_demonstrations_are_k_tasks_per_unseen_app_at_demo_seeds(tmp_path):
    from gui_jax.jobs.common import prepare
    c = _config()
    _, test_tasks, _, _ = prepare(c, str(tmp_path), sides=())
    demos = demo_tasks(c, test_tasks)
    test_apps, test_templates = {t.app for t in test_tasks}, {t.template for t in test_tasks}
    assert test_apps == {"contacts", "calendar"} and set(demos) == test_apps
    assert all(len(v) == 2 for v in demos.values())
    lo, hi = c.few_shot.demo_seed_range
    for app, tasks in demos.items():
        assert all(t.app == app and t.template in test_templates and lo <= t.seed < hi for t in tasks)
    assert not {t.task_id for v in demos.values() for t in v} & {t.task_id for t in test_tasks}
    # PhoneSim repeats instances across seeds: a held-out instance at a demonstration seed is skipped, not learnt
    from gui_jax.envs.sim import make_task
    from gui_jax.tasks.splits import instance_key
    same = make_task("contacts.favorite", lo)
    assert demos["contacts"][0].seed == lo    # the first demonstration, unless it is held out
    demos = demo_tasks(c, list(test_tasks) + [same])
    assert all(len(v) == 2 for v in demos.values()) and demos["contacts"][0].seed > lo
    assert instance_key(same) not in {instance_key(t) for v in demos.values() for t in v}


def test_every_adaptation_starts_from_the_start_the_zero_shot_row_evaluates(tmp_path, monkeypatch):
    """Each per-app fine-tune and the all-app one begin from the saved start (not from the previous fine-tune),
    train on exactly their app's k demonstrations, and the modes' rows are evaluated with the adapted weights."""
    import jax
    import numpy as np

    from gui_jax.jobs import few_shot
    fingerprint = lambda agent: float(sum(np.asarray(x, np.float64).sum() for x in jax.tree.leaves(agent.params)))
    trained, evaluated = [], []
    real_sft, real_eval = few_shot.train_sft, few_shot.evaluate_online_pool

    def sft(agent, eps, *a, **kw):
        trained.append((kw["workdir"].rsplit("/", 1)[-1], fingerprint(agent), sorted({e.app for e in eps}), len(eps)))
        return real_sft(agent, eps, *a, **kw)

    def evaluate(agent, tasks, *a, **kw):
        evaluated.append((fingerprint(agent), sorted({t.app for t in tasks})))
        return real_eval(agent, tasks, *a, **kw)

    monkeypatch.setattr(few_shot, "train_sft", sft)
    monkeypatch.setattr(few_shot, "evaluate_online_pool", evaluate)
    # the start: random weights (sft.num_steps = 0); the all-app mode adapts once, like one per-app fine-tune
    few_shot.run(_config(**{"sft.num_steps": 0, "few_shot.sft.num_steps": 1,
                            "few_shot.modes": ("zero_shot", "per_app")}), str(tmp_path))
    adapted = trained  # the start's own SFT (no init.checkpoint_dir) runs through jobs.common.starting_point
    assert [(n, apps, k) for n, _, apps, k in adapted] == [("per_app_calendar", ["calendar"], 2),
                                                         ("per_app_contacts", ["contacts"], 2)]
    base = evaluated[0][0]  # zero-shot rows: the start
    assert all(f == base for f, _ in evaluated[:2]) and [apps for _, apps in evaluated] == [["calendar"],
                                                                                          ["contacts"]] * 2
    assert all(f == base for _, f, _, _ in adapted)  # the second app's fine-tune did not start from the first's
    assert all(f != base for f, _ in evaluated[2:]) and evaluated[2][0] != evaluated[3][0]
    res = json.loads((tmp_path / "results.json").read_text())
    assert set(res) == {"start", "per_app"} and res["start"]["n"] == len(res["start"]["online_success"]) == 6
    assert set(res["per_app"]["online_success"]) == set(res["start"]["online_success"])
    assert "| zero_shot |" in (tmp_path / "results.md").read_text()


def test_unknown_mode_is_named():
    from gui_jax.jobs import few_shot
    with pytest.raises(ValueError, match=r"few_shot.modes has unknown modes \['one_app'\]"):
        few_shot.run(_config(**{"few_shot.modes": ("zero_shot", "one_app")}), "/nonexistent")
