"""prepare() builds an instance split over the configured templates only: the same tasks as the split
over the whole registry, in the same order (the restriction is only a speed-up)."""
import pytest

from gui_jax.jobs import load_config
from gui_jax.jobs.common import prepare, select_tasks
from gui_jax.tasks.splits import make_split


def _config(**over):
    base = {"data.train_seed_range": (0, 40), "data.test_seed_range": (1000, 1012),
            "data.num_train_episodes": 90, "data.num_test_episodes": 40}
    return load_config("configs/quickstart.py", **{**base, **over})


def test_instance_split_over_the_configured_templates_selects_the_same_tasks(tmp_path):
    config = _config()
    d = config.data
    train, test, train_eps, test_eps = prepare(config, str(tmp_path), sides=())
    full = make_split("instance", train_seeds=range(*d.train_seed_range), test_seeds=range(*d.test_seed_range))
    assert [t.task_id for t in train] == [t.task_id for t in select_tasks(full.train, d, d.num_train_episodes)]
    assert [t.task_id for t in test] == [t.task_id for t in select_tasks(full.test, d, d.num_test_episodes)]
    assert len(train) == 90 and len(test) == 40 and train_eps == [] and test_eps == []
    assert {t.template for t in train} == set(d.templates)
    assert not {t.task_id for t in train} & {t.task_id for t in test}


def test_an_unknown_template_is_named(tmp_path):
    config = _config(**{"data.templates": ("clock.alarm_toggle", "clock.alarm_togle")})
    with pytest.raises(KeyError, match="unknown task template 'clock.alarm_togle'"):
        prepare(config, str(tmp_path), sides=())
