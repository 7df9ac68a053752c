"""EpisodeStore random access, filtering, index cache; StepDataset flattening."""

import grain
import numpy as np
import pytest

from gui_jax.core.serialize import EpisodeFormatError, save_episode, save_episodes
from gui_jax.core.types import Action, Episode, Observation, UIElement
from gui_jax.data import episode_store as es
from gui_jax.data.episode_store import EpisodeStore, write_store_index
from gui_jax.data.steps import StepDataset

SPECS = [  # (app, template, difficulty, n_steps)
    ("clock", "SetAlarm", "easy", 2),
    ("clock", "StopTimer", "medium", 3),
    ("notes", "NewNote", "easy", 1),
    ("notes", "EditNote", "hard", 4),
    ("files", "Rename", "medium", 2),
]


def _episodes():
    rng = np.random.default_rng(0)
    eps = []
    for k, (app, template, diff, n) in enumerate(SPECS):
        obs = [Observation(screenshot=rng.integers(0, 256, (5, 4, 3), dtype=np.uint8),
                           ui_elements=[UIElement(0, "Button", (0, 0, 2, 2), text=f"b{k}{t}")],
                           current_app=app, goal=f"goal {k} ✓") for t in range(n + 1)]
        actions = [Action(type="click", x=float(t), y=float(k)) for t in range(n - 1)]
        actions.append(Action(type="terminate", status="success"))
        eps.append(Episode(episode_id=f"ep{k}", goal=f"goal {k} ✓", observations=obs, actions=actions,
                           target_bboxes=[(0.0, 0.0, 2.0, 2.0)] * (n - 1) + [None],
                           step_instructions=[f"s{t}" for t in range(n)], app=app, template=template,
                           difficulty=diff, info={"k": k}))
    return eps


@pytest.fixture
def root(tmp_path):
    save_episodes(_episodes(), tmp_path / "store")
    return tmp_path / "store"


def test_random_access_and_metadata(root):
    store = EpisodeStore(root)
    eps = _episodes()
    assert len(store) == 5 and store.ids == [f"ep{k}" for k in range(5)]
    assert store[3] == eps[3] and store[-1] == eps[4]
    assert [e.episode_id for e in store] == store.ids
    m = store.meta(1)
    assert (m.app, m.template, m.difficulty, m.num_steps, m.num_observations) == \
        ("clock", "StopTimer", "medium", 3, 4)
    assert store.get("ep2") == eps[2] and store.index_of("ep4") == 4
    assert store.values("app") == ["clock", "files", "notes"]
    with pytest.raises(IndexError, match="episode index 5 out of range for 5"):
        store[5]
    with pytest.raises(KeyError, match="no episode with id 'nope'"):
        store.index_of("nope")
    with pytest.raises(TypeError):
        store["ep1"]
    assert store[np.int64(2)] == eps[2]


def test_filters_and_views(root):
    store = EpisodeStore(root)
    assert store.filter(app="clock").ids == ["ep0", "ep1"]
    assert store.filter(difficulty=["easy", "hard"]).ids == ["ep0", "ep2", "ep3"]
    assert store.filter(app="notes", template="EditNote").ids == ["ep3"]
    assert store.filter(ids=["ep4", "ep1"]).ids == ["ep1", "ep4"]
    assert store.filter(predicate=lambda m: m.num_steps >= 3).ids == ["ep1", "ep3"]
    sub = store.filter(app="notes").filter(difficulty="hard")
    assert len(sub) == 1 and sub[0] == _episodes()[3]
    assert store.subset([4, 0]).ids == ["ep4", "ep0"]
    assert len(store.filter(app="missing")) == 0


def test_per_step_access_matches_full_load(root):
    store = EpisodeStore(root)
    ep = _episodes()[3]
    assert store.actions(3) == ep.actions
    for t in range(len(ep.observations)):
        assert store.observation(3, t) == ep.observations[t]
    assert store.step_fields(3, 0) == ((0.0, 0.0, 2.0, 2.0), "s0")
    with pytest.raises(IndexError, match="has 5 observations; asked for 5"):
        store.observation(3, 5)


def test_index_cache_used_and_invalidated(root, monkeypatch):
    write_store_index(root)
    real = es._read_record
    monkeypatch.setattr(es, "_read_record", lambda folder: (_ for _ in ()).throw(AssertionError("scanned")))
    assert EpisodeStore(root).ids == [f"ep{k}" for k in range(5)]  # from index.json only
    monkeypatch.setattr(es, "_read_record", real)
    extra = _episodes()[0]
    extra.episode_id = "ep9"
    save_episode(extra, root / "000009")
    store = EpisodeStore(root)  # index is stale: rescans
    assert store.ids[-1] == "ep9" and len(store) == 6


def test_duplicate_ids_and_corrupt_json(root):
    dup = _episodes()[0]
    save_episode(dup, root / "000099")
    with pytest.raises(EpisodeFormatError, match="episode id 'ep0' appears in folders '000000' and '000099'"):
        EpisodeStore(root)
    (root / "000099" / "episode.json").write_text("{not json")
    with pytest.raises(EpisodeFormatError, match=r"000099/episode.json: invalid JSON"):
        EpisodeStore(root)


def test_grain_source(root):
    store = EpisodeStore(root)
    ds = grain.MapDataset.source(store).map(lambda e: e.episode_id)
    assert list(ds) == store.ids


@pytest.mark.parametrize("use_store", [True, False])
def test_step_dataset(root, use_store):
    eps = _episodes()
    source = EpisodeStore(root) if use_store else eps
    steps = StepDataset(source, history=2)
    assert len(steps) == sum(n for *_, n in SPECS) == 12
    pairs = [steps.locate(k) for k in range(len(steps))]
    assert pairs == [(e, t) for e, (*_, n) in enumerate(SPECS) for t in range(n)]
    assert steps.flat_index(3, 2) == 2 + 3 + 1 + 2
    rec = steps[steps.flat_index(3, 2)]
    ep = eps[3]
    assert (rec.episode_index, rec.step_index, rec.episode_id, rec.goal, rec.num_steps) == \
        (3, 2, "ep3", ep.goal, 4)
    assert rec.observation == ep.observations[2] and rec.action == ep.actions[2]
    assert rec.previous_actions == tuple(ep.actions[:2])
    assert len(rec.history_screenshots) == 2
    assert all(np.array_equal(a, ep.observations[t].screenshot)
               for a, t in zip(rec.history_screenshots, (0, 1)))
    assert rec.target_bbox == (0.0, 0.0, 2.0, 2.0) and rec.step_instruction == "s2"
    first = steps[0]
    assert first.history_screenshots == () and not first.is_last and steps[-1].is_last
    with pytest.raises(IndexError):
        steps[12]


def test_step_pipeline_over_store(root):
    from gui_jax.data.pipeline import list_batch, make_pipeline

    steps = StepDataset(EpisodeStore(root))
    ds = make_pipeline(steps, seed=4, batch_size=4, shard_index=0, shard_count=1, num_epochs=2,
                       batch_fn=list_batch, transform=lambda r: (r.episode_id, r.step_index, r.action))
    batches = list(ds)
    assert len(batches) == 6
    epoch0 = [x for b in batches[:3] for x in b]
    expected = {(f"ep{e}", t) for e, (*_, n) in enumerate(SPECS) for t in range(n)}
    assert {(i, t) for i, t, _ in epoch0} == expected and len(epoch0) == 12
    eps = _episodes()
    assert all(a == eps[int(i[2:])].actions[t] for i, t, a in epoch0)


def test_write_episodes_streams_and_reopens_lazily(tmp_path):
    eps = _episodes()
    yielded = []

    def gen():
        for ep in eps:
            yielded.append(ep.episode_id)
            yield ep
    written = []
    store = es.write_episodes(gen(), tmp_path / "w", on_written=lambda i, ep: written.append((i, yielded[-1])))
    assert written == [(i, f"ep{i}") for i in range(5)]  # each written before the next is generated
    assert (tmp_path / "w" / es.INDEX_FILE).exists() and store.ids == [e.episode_id for e in eps]
    lazy = store.lazy_episodes()
    assert len(lazy) == 5
    for want, got in zip(eps, lazy):
        assert got.actions == want.actions and got.info == want.info and got.target_bboxes == want.target_bboxes
        assert list(got.observations) == want.observations  # StoredObservation == Observation field by field
    with pytest.raises(FileExistsError, match="already holds 5 episodes"):
        es.write_episodes(iter(eps[:2]), tmp_path / "w")
    assert len(es.write_episodes(iter(eps[:2]), tmp_path / "w", overwrite=True)) == 2
    assert len(EpisodeStore(tmp_path / "w")) == 2
