"""LengthGroupedSource: each epoch covers distinct elements, each batch is a run of one length-sorted
block, the order is a pure function of the seed, and padding to the longest row shrinks."""
import numpy as np
import pytest

from gui_jax.data.pipeline import LengthGroupedSource, list_batch, make_pipeline


def _batches(src, b):
    return [src.order[i:i + b] for i in range(0, len(src.order), b)]


def test_epochs_batches_and_blocks():
    lengths = [5, 1, 9, 3, 7, 2, 8, 6, 4, 10, 11]          # 11 elements, batch 2 → 10 per epoch
    src = LengthGroupedSource(list(range(11)), lengths, batch_size=2, seed=3, epochs=2, megabatch=2)
    assert len(src) == 20 and src[0] == src.order[0]
    for e in range(2):
        ep = src.order[e * 10:(e + 1) * 10]
        assert len(set(ep)) == 10                            # no element twice in an epoch
    rng = np.random.default_rng([3, 0])
    perm = rng.permutation(11)[:10]
    blocks = [sorted(perm[k:k + 4], key=lambda i: lengths[i]) for k in (0, 4, 8)]
    expected = [blk[k:k + 2] for blk in blocks for k in range(0, len(blk), 2)]
    order = rng.permutation(len(expected))
    assert [list(b) for b in _batches(src, 2)[:5]] == [[int(i) for i in expected[k]] for k in order]
    for b in _batches(src, 2):
        assert lengths[b[0]] <= lengths[b[1]]
    again = LengthGroupedSource(list(range(11)), lengths, batch_size=2, seed=3, epochs=2, megabatch=2)
    other = LengthGroupedSource(list(range(11)), lengths, batch_size=2, seed=4, epochs=2, megabatch=2)
    assert again.order == src.order and other.order != src.order


def test_padding_shrinks_and_the_pipeline_reads_the_order():
    rng = np.random.default_rng(0)
    lengths = rng.integers(150, 460, size=2000)
    src = LengthGroupedSource(list(range(2000)), lengths, batch_size=16, seed=0, epochs=1)
    grouped = np.mean([max(lengths[i] for i in b) for b in _batches(src, 16)])
    plain = np.mean([max(lengths[i] for i in b) for b in np.split(rng.permutation(2000), 125)])
    assert grouped < 0.8 * plain
    it = iter(make_pipeline(src, seed=None, batch_size=16, shard_index=0, shard_count=1, batch_fn=list_batch,
                            num_threads=0))
    assert next(it) == src.order[:16] and next(it) == src.order[16:32]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="3 lengths for a source of 4"):
        LengthGroupedSource([0, 1, 2, 3], [1, 2, 3], batch_size=2, seed=0, epochs=1)
    with pytest.raises(ValueError, match="batch_size 5 must be in 1..4"):
        LengthGroupedSource([0, 1, 2, 3], [1, 2, 3, 4], batch_size=5, seed=0, epochs=1)
