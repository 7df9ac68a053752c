"""Grain pipeline: deterministic per-epoch shuffle, sharding, exact resume, epoch boundaries."""
import json
from itertools import islice

import numpy as np
import pytest

from gui_jax.data.pipeline import batches_per_epoch, list_batch, make_pipeline


def _take(ds, n):
    return [np.asarray(b).tolist() for b in islice(iter(ds), n)]


def _flat(batches):
    return [x for b in batches for x in b]


def test_shuffle_is_deterministic_and_reshuffles_each_epoch():
    src = np.arange(12)
    kw = dict(batch_size=4, shard_index=0, shard_count=1, num_epochs=3)
    a = _take(make_pipeline(src, seed=7, **kw), 9)
    assert a == _take(make_pipeline(src, seed=7, **kw), 9)
    assert a != _take(make_pipeline(src, seed=8, **kw), 9)
    epochs = [_flat(a[3 * e:3 * e + 3]) for e in range(3)]
    for ep in epochs:
        assert sorted(ep) == list(range(12))  # every epoch is a permutation
    assert epochs[0] != epochs[1] != epochs[2] and epochs[0] != list(range(12))
    assert _flat(_take(make_pipeline(src, seed=None, **kw), 3)) == list(range(12))  # no shuffle


@pytest.mark.parametrize("n, count", [(12, 3), (10, 3), (7, 2)])
def test_shards_disjoint_covering_and_equal(n, count):
    per_shard = [_flat(_take(make_pipeline(np.arange(n), seed=1, batch_size=1, shard_index=i,
                                           shard_count=count, num_epochs=1), n)) for i in range(count)]
    sizes = {len(s) for s in per_shard}
    assert sizes == {n // count}  # equal work per process
    union = [x for s in per_shard for x in s]
    assert len(set(union)) == len(union)  # disjoint
    assert len(union) == count * (n // count)  # covers all but n mod count
    # the shards are a partition of the same global permutation
    global_order = _flat(_take(make_pipeline(np.arange(n), seed=1, batch_size=1, shard_index=0,
                                             shard_count=1, num_epochs=1), n))
    kept = global_order[:count * (n // count)]
    for i, s in enumerate(per_shard):
        assert s == kept[i::count]
    if n % count:  # uneven_shards: every element, unequal sizes
        uneven = [_flat(_take(make_pipeline(np.arange(n), seed=1, batch_size=1, shard_index=i,
                                            shard_count=count, num_epochs=1, even_shards=False), n))
                  for i in range(count)]
        assert sorted(x for s in uneven for x in s) == list(range(n))


def test_dropped_elements_vary_across_epochs():
    # 10 elements over 3 shards: 9 kept per epoch; which one falls off changes with the epoch
    shards = [_take(make_pipeline(np.arange(10), seed=0, batch_size=3, shard_index=i, shard_count=3,
                                  num_epochs=6), 100) for i in range(3)]
    assert [len(s) for s in shards] == [6, 6, 6]
    dropped = []
    for epoch in range(6):
        seen = [x for s in shards for x in s[epoch]]
        assert len(set(seen)) == 9
        (missing,) = set(range(10)) - set(seen)
        dropped.append(missing)
    assert len(set(dropped)) > 1


@pytest.mark.parametrize("transform_kind", ["plain", "random"])
def test_resume_mid_epoch_gives_identical_remainder(transform_kind):
    src = np.arange(23)
    kw = dict(seed=5, batch_size=4, shard_index=1, shard_count=2, num_epochs=4)
    if transform_kind == "plain":
        kw["transform"] = lambda x: x * 10
    else:
        kw["random_transform"] = lambda x, rng: int(x) * 1000 + int(rng.integers(0, 1000))
        kw["batch_fn"] = list_batch
    full = _take(make_pipeline(src, **kw), 1000)
    assert len(full) == 4 * batches_per_epoch(23, batch_size=4, shard_index=1, shard_count=2)
    it = iter(make_pipeline(src, **kw))
    head = [np.asarray(next(it)).tolist() for _ in range(3)]  # stop inside epoch 2 (2 batches/epoch)
    state = json.loads(json.dumps(it.get_state()))  # survives a JSON checkpoint
    fresh = iter(make_pipeline(src, **kw))
    fresh.set_state(state)
    tail = [np.asarray(b).tolist() for b in fresh]
    assert head + tail == full
    # restoring an earlier state in the same iterator rewinds it
    it.set_state({**state})
    assert np.asarray(next(it)).tolist() == full[3]


def test_epoch_boundaries_and_remainders():
    src = np.arange(10)
    kw = dict(seed=2, batch_size=4, shard_index=0, shard_count=1, num_epochs=2)
    dropped = _take(make_pipeline(src, **kw), 100)
    assert [len(b) for b in dropped] == [4, 4, 4, 4]
    kept = _take(make_pipeline(src, drop_remainder=False, **kw), 100)
    assert [len(b) for b in kept] == [4, 4, 2, 4, 4, 2]
    e0, e1 = _flat(kept[:3]), _flat(kept[3:])
    assert sorted(e0) == sorted(e1) == list(range(10))  # no batch spans two epochs
    assert _flat(dropped[:2]) == e0[:8] and _flat(dropped[2:]) == e1[:8]
    assert batches_per_epoch(10, batch_size=4, drop_remainder=False) == 3
    forever = make_pipeline(src, seed=2, batch_size=4, shard_index=0, shard_count=1)
    assert len(_take(forever, 50)) == 50


def test_defaults_to_jax_process_and_validates():
    a = _take(make_pipeline(np.arange(8), seed=0, batch_size=2, num_epochs=1), 10)
    b = _take(make_pipeline(np.arange(8), seed=0, batch_size=2, shard_index=0, shard_count=1,
                            num_epochs=1), 10)
    assert a == b
    with pytest.raises(ValueError, match="no batch of 9"):
        make_pipeline(np.arange(8), seed=0, batch_size=9, shard_index=0, shard_count=1)
    with pytest.raises(ValueError, match="shard_index 2 not in"):
        make_pipeline(np.arange(8), seed=0, batch_size=1, shard_index=2, shard_count=2)
    with pytest.raises(ValueError, match="both shard_index and shard_count"):
        make_pipeline(np.arange(8), seed=0, batch_size=1, shard_index=0)


def test_python_objects_with_list_batch():
    src = [{"id": f"e{i}", "pixels": np.full((2, 2), i, np.uint8)} for i in range(6)]
    ds = make_pipeline(src, seed=0, batch_size=2, shard_index=0, shard_count=1, num_epochs=1,
                       batch_fn=list_batch, transform=lambda d: d["id"])
    out = list(ds)
    assert all(isinstance(b, list) for b in out) and sorted(_flat(out)) == [f"e{i}" for i in range(6)]
    stacked = list(make_pipeline(src, seed=0, batch_size=2, shard_index=0, shard_count=1, num_epochs=1))
    assert stacked[0]["pixels"].shape == (2, 2, 2) and stacked[0]["id"].shape == (2,)
