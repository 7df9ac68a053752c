"""CMDP splits, curriculum buckets and the expert-episode generation job."""

from collections import Counter

import ml_collections
import pytest

from gui_jax.core.serialize import load_episodes
from gui_jax.tasks import (
    REGIMES,
    Split,
    SplitError,
    curriculum_stages,
    curriculum_tasks,
    difficulty_buckets,
    get_template,
    list_templates,
    make_split,
    make_task,
)
from gui_jax.tasks.splits import MAX_DIFFICULTY_GAP, _instances, instance_key


@pytest.fixture(scope="module")
def splits():
    return {r: make_split(r) for r in REGIMES}


def _mean(tasks):
    return sum(t.level for t in tasks) / len(tasks)


def test_splits_are_balanced_and_disjoint(splits):
    for regime, s in splits.items():
        assert abs(_mean(s.train) - _mean(s.test)) <= MAX_DIFFICULTY_GAP, regime
        assert not {instance_key(t) for t in s.train} & {instance_key(t) for t in s.test}
        assert len({instance_key(t) for t in s.train}) == len(s.train)
        assert "mean difficulty gap" in s.report()


def test_instance_split(splits):
    s = splits["instance"]
    param = set(list_templates(parametric=True))
    assert {t.template for t in s.train} == {t.template for t in s.test} == param
    assert not {t.seed for t in s.train} & {t.seed for t in s.test}
    assert set(s.info["excluded_templates"]) == set(list_templates(parametric=False))
    per_template = Counter(t.template for t in s.test)
    assert set(per_template.values()) == {3}  # every template yields distinct test instances


def test_instance_split_keeps_small_templates_on_both_sides():
    # tasks.complete has 16 distinct instances (one per to-do title); test seeds 1000-1044 draw all 16,
    # and removing train duplicates of them used to leave the template on the test side only.
    s = make_split("instance", train_seeds=range(0, 400), test_seeds=range(1000, 1045),
                   templates=("tasks.complete", "music.play"))
    test, train = Counter(t.template for t in s.test), Counter(t.template for t in s.train)
    assert test["tasks.complete"] == 8 and train["tasks.complete"] == 8
    assert s.info["capped_templates"] == {"tasks.complete": (8, 16, 16)}
    assert "tasks.complete: 16 distinct instances; test keeps 8 of 16" in s.report()
    # the kept test instances are the first drawn in seed order; an uncapped template is unchanged
    drawn = _instances(["tasks.complete"], range(1000, 1045))
    assert [t.seed for t in s.test if t.template == "tasks.complete"] == [t.seed for t in drawn[:8]]
    assert ([t.seed for t in s.test if t.template == "music.play"]
            == [t.seed for t in _instances(["music.play"], range(1000, 1045))])


def test_instance_split_check_names_one_sided_templates():
    music = [make_task("music.play", s) for s in (1, 2)]
    with pytest.raises(SplitError, match=r"one side only.*test only: \['tasks.complete'\]"):
        Split("instance", music, [make_task("music.play", 3), make_task("tasks.complete", 4)]).check()


def test_template_split(splits):
    s = splits["template"]
    train_t, test_t = set(s.info["train_templates"]), set(s.info["test_templates"])
    assert not train_t & test_t
    assert {get_template(n).app for n in test_t} <= {get_template(n).app for n in train_t}
    for app in {get_template(n).app for n in test_t}:
        tr = [n for n in train_t if get_template(n).app == app]
        te = [n for n in test_t if get_template(n).app == app]
        assert len(tr) >= len(te) and len(te) == max(1, round((len(tr) + len(te)) / 4))
        for n in te:  # an equal-or-easier template of the same app stays in train
            assert any(get_template(m).level <= get_template(n).level for m in tr)


def test_app_split(splits):
    s = splits["app"]
    train_apps = {a for t in s.train for a in t.apps}
    test_apps = {a for t in s.test for a in t.apps}
    assert not train_apps & test_apps and test_apps == set(s.info["test_apps"])
    assert len(test_apps) == 3


def test_split_check_catches_leaks():
    t = make_task("notes.read", 1)
    u = make_task("notes.read", 2)
    with pytest.raises(SplitError, match="both train and test"):
        Split("instance", [t, u], [t]).check()
    with pytest.raises(SplitError, match="seeds"):
        make_split("instance", train_seeds=(1, 2), test_seeds=(2, 3))
    with pytest.raises(SplitError, match="unknown split regime"):
        make_split("galaxy")


def test_curriculum(splits):
    tasks = splits["instance"].test
    b = difficulty_buckets(tasks)
    assert sum(len(v) for v in b.values()) == len(tasks)
    assert all(t.difficulty == d for d, v in b.items() for t in v)
    stages = curriculum_stages(tasks)
    assert [len(x) for x in stages] == [len(b["easy"]), len(b["easy"]) + len(b["medium"]), len(tasks)]
    assert curriculum_tasks(tasks, 0, (10, 20)) == stages[0]
    assert curriculum_tasks(tasks, 15, (10, 20)) == stages[1]
    assert curriculum_tasks(tasks, 99, (10, 20)) == stages[2]


def test_generate_episodes_job(tmp_path):
    import importlib.util
    import pathlib

    from gui_jax.jobs.generate_episodes import run

    spec = importlib.util.spec_from_file_location(
        "gen_cfg", pathlib.Path(__file__).resolve().parents[2] / "configs" / "generate_episodes.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cfg = mod.get_config()
    assert isinstance(cfg, ml_collections.ConfigDict) and cfg.job == "generate_episodes"
    cfg.split, cfg.side, cfg.num_episodes, cfg.resolution, cfg.progress = "template", "test", 2, (108, 240), False
    run(cfg, str(tmp_path))
    eps = load_episodes(tmp_path / "episodes" / "template_test")
    assert len(eps) == 2
    for ep in eps:
        task = make_task(ep.template, ep.info["seed"])
        assert ep.goal == task.goal and len(ep.actions) == task.optimal_steps
        assert len(ep.observations) == len(ep.actions) + 1
        assert ep.observations[0].screenshot.shape == (240, 108, 3)
        assert ep.actions[-1].type == "terminate"
        assert all(b is not None for a, b in zip(ep.actions, ep.target_bboxes) if a.type == "click")
