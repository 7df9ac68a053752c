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


def test_screen_variants_repeat_train_goals_on_other_screens_and_leave_test_alone(tmp_path):
    from gui_jax.envs.sim import PhoneSim
    from gui_jax.rl.semi_online_rollout import expert_element
    from gui_jax.tasks.generate import generate_episode
    from gui_jax.tasks.splits import instance_key, screen_variants
    base_train, base_test, _, _ = prepare(_config(), str(tmp_path / "a"), sides=())
    train, test, _, _ = prepare(_config(**{"data.train_screens_per_instance": 3}), str(tmp_path / "b"), sides=())
    assert [t.task_id for t in test] == [t.task_id for t in base_test]
    # the same instances, each first as before, then up to 2 more seeds from the train range
    assert {instance_key(t) for t in train} == {instance_key(t) for t in base_train}
    firsts = [t for i, t in enumerate(train) if i == 0 or instance_key(train[i - 1]) != instance_key(t)]
    assert [t.task_id for t in firsts] == [t.task_id for t in base_train]
    by_key, tasks_of = {}, {}
    for t in train:
        by_key.setdefault(instance_key(t), []).append(t.seed)
        tasks_of.setdefault(instance_key(t), []).append(t)
    assert max(len(v) for v in by_key.values()) == 3 and all(len(set(v)) == len(v) for v in by_key.values())
    assert all(0 <= s < 40 for v in by_key.values() for s in v)
    assert not {instance_key(t) for t in train} & {instance_key(t) for t in test}
    # exactly the available seeds: every seed of 0..39 drawing that instance, up to the cap, in seed order
    music = next(t for t in base_train if t.template == "music.play")
    from gui_jax.tasks import make_task
    same = [s for s in range(40) if instance_key(make_task("music.play", s)) == instance_key(music)]
    assert by_key[instance_key(music)] == ([music.seed] + [s for s in same if s != music.seed])[:3]
    # another screen: for a repeated goal, the target element moves in at least one of them
    sim = PhoneSim(render=False)
    moved = 0
    for tasks in [v for v in tasks_of.values() if len(v) == 3][:6]:
        idx = {tuple(expert_element(ep, i) for i, a in enumerate(ep.actions) if a.type == "click")
               for ep in (generate_episode(t, sim) for t in tasks)}
        moved += len(idx) > 1
    assert moved >= 1
    assert screen_variants(base_train, range(40), 1) == list(base_train)
    with pytest.raises(ValueError, match="per_instance must be >= 1, got 0"):
        screen_variants(base_train, range(40), 0)


def test_rl_pool_extends_the_sft_episodes_with_tasks_sft_never_saw(tmp_path):
    from gui_jax.jobs.quickstart import rl_episodes
    config = _config(**{"data.num_train_episodes": 12, "data.num_test_episodes": 4, "data.rl_train_episodes": 0})
    _, _, sft_eps, _ = prepare(config, str(tmp_path), sides=("train",))
    assert rl_episodes(config, str(tmp_path), sft_eps) is sft_eps          # rl_train_episodes = 0: the SFT's
    config.data.rl_train_episodes = 30
    pool = rl_episodes(config, str(tmp_path), sft_eps)
    assert len(pool) == 30 and [e.episode_id for e in pool[:12]] == [e.episode_id for e in sft_eps]
    assert len({e.episode_id for e in pool}) == 30                          # 18 further, distinct tasks
    assert len(list((tmp_path / "rl_pool" / "episodes" / "train").iterdir())) >= 30   # cached beside the run
    assert [e.episode_id for e in rl_episodes(config, str(tmp_path), sft_eps)] == [e.episode_id for e in pool]
    config.data.rl_unseen_only = True                                         # the 18 SFT never saw, in order
    assert [e.episode_id for e in rl_episodes(config, str(tmp_path), sft_eps)] == [e.episode_id for e in pool[12:]]
    config.data.rl_train_episodes = 12
    with pytest.raises(ValueError, match=r"rl_unseen_only needs data.rl_train_episodes \(12\) above "
                                         r"data.num_train_episodes \(12\)"):
        rl_episodes(config, str(tmp_path), sft_eps)


def test_text_prompts_keep_pixels_on_disk_and_load_the_same_episodes(tmp_path):
    """prompt.observation ui_text: prepare's episodes are PngObservation-backed, freshly generated and from
    the cache alike, and equal to the eagerly loaded ones; a screenshot recipe keeps its pixels in memory."""
    from gui_jax.core.serialize import PngObservation, load_episode
    from gui_jax.jobs.common import episode_pixels
    config = _config(**{"data.num_train_episodes": 6, "data.num_test_episodes": 2})
    assert config.prompt.observation == "ui_text" and episode_pixels(config) == "lazy"
    assert episode_pixels(load_config("configs/ui_s1_7b.py")) == "eager"
    _, _, fresh, _ = prepare(config, str(tmp_path), sides=("train",))
    _, _, cached, _ = prepare(config, str(tmp_path), sides=("train",))
    folders = sorted((tmp_path / "episodes" / "train").glob("0*"))
    eager = [load_episode(f) for f in folders]
    for eps in (fresh, cached):
        assert all(type(o) is PngObservation for e in eps for o in e.observations)
        assert eps == eager
