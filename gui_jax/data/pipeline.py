"""Grain input pipelines: random-access source → per-epoch shuffle → shard → map → batch.

Order of an epoch. Epoch e is a permutation of the whole source drawn from (seed, e) (grain's
index shuffle, reseeded every epoch); with `even_shards` its first
shard_count·⌊N/shard_count⌋ positions are kept (a different N mod shard_count elements fall off
each epoch) so every process sees the same number of batches and no host waits at a
collective; process i takes positions i, i+count, i+2·count, … . Batches never span epochs:
with `drop_remainder` the short last batch of each epoch is dropped, otherwise it is emitted
short. Everything is a pure function of (seed, epoch, position), so the iterator state is just
the next batch index: `it.get_state()` / `it.set_state(state)` resume exactly, in a fresh
process too.

Usage::
    ds = make_pipeline(store, seed=0, batch_size=8, transform=to_tokens)
    it = iter(ds); batch = next(it); state = it.get_state()
    it2 = iter(ds); it2.set_state(state)   # continues with the same next batch
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import grain
import numpy as np

from gui_jax.data.steps import StepDataset, StepRecord  # re-exported for callers

__all__ = ["make_pipeline", "batches_per_epoch", "process_shard", "list_batch", "StepDataset",
           "StepRecord", "LengthGroupedSource"]


def process_shard() -> tuple[int, int]:
    """(shard_index, shard_count) of this JAX process (jax.process_index / process_count)."""
    import jax  # lazy: the data layer stays importable without initialising JAX

    return jax.process_index(), jax.process_count()


def list_batch(elements: Sequence[Any]) -> list:
    """Batch function that keeps elements as a list (for episodes, StepRecords, strings)."""
    return list(elements)


def _shard_size(n: int, shard_index: int, shard_count: int, even_shards: bool) -> int:
    if even_shards:
        return n // shard_count
    return len(range(shard_index, n, shard_count))


def batches_per_epoch(num_elements: int, *, batch_size: int, shard_index: int = 0,
                      shard_count: int = 1, even_shards: bool = True,
                      drop_remainder: bool = True) -> int:
    """Number of batches one shard yields per epoch under `make_pipeline`'s rules."""
    per_shard = _shard_size(num_elements, shard_index, shard_count, even_shards)
    return per_shard // batch_size if drop_remainder else -(-per_shard // batch_size)


def _check_args(n, seed, batch_size, shard_index, shard_count, num_epochs, even_shards,
                drop_remainder):
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if shard_count <= 0 or not 0 <= shard_index < shard_count:
        raise ValueError(f"shard_index {shard_index} not in [0, shard_count={shard_count})")
    if num_epochs is not None and num_epochs <= 0:
        raise ValueError(f"num_epochs must be positive or None, got {num_epochs}")
    if seed is not None and not 0 <= seed < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    if batches_per_epoch(n, batch_size=batch_size, shard_index=shard_index,
                         shard_count=shard_count, even_shards=even_shards,
                         drop_remainder=drop_remainder) == 0:
        raise ValueError(
            f"source of {n} elements gives shard {shard_index}/{shard_count} no batch of "
            f"{batch_size} per epoch (even_shards={even_shards}, drop_remainder={drop_remainder})")


def make_pipeline(source, *, seed: Optional[int], batch_size: int,
                  shard_index: Optional[int] = None, shard_count: Optional[int] = None,
                  transform: Optional[Callable[[Any], Any]] = None,
                  random_transform: Optional[Callable[[Any, np.random.Generator], Any]] = None,
                  num_epochs: Optional[int] = None, drop_remainder: bool = True,
                  even_shards: bool = True,
                  batch_fn: Optional[Callable[[Sequence[Any]], Any]] = None,
                  num_threads: int = 4, prefetch_buffer_size: int = 32) -> grain.IterDataset:
    """Batches of `source` (anything with __len__ and __getitem__(int)) as a grain IterDataset.

    seed: shuffle seed (None: no shuffle, source order). shard_index/shard_count default to this
    JAX process. transform: element → element; random_transform: (element, rng) → element with
    an rng derived from (seed, position), so augmentations also replay exactly on resume.
    num_epochs None repeats forever. batch_fn: defaults to stacking pytrees of arrays (grain);
    use `list_batch` for Python objects. num_threads=0 reads in the calling thread.
    """
    if shard_index is None or shard_count is None:
        if shard_index is not None or shard_count is not None:
            raise ValueError("give both shard_index and shard_count, or neither")
        shard_index, shard_count = process_shard()
    n = len(source)
    _check_args(n, seed, batch_size, shard_index, shard_count, num_epochs, even_shards,
                drop_remainder)
    ds = grain.MapDataset.source(source)
    if seed is not None:
        ds = ds.shuffle(seed=seed)
    if even_shards and n % shard_count:
        ds = ds[: (n // shard_count) * shard_count]
    if shard_count > 1:
        ds = ds[shard_index::shard_count]
    if transform is not None:
        ds = ds.map(transform)
    if random_transform is not None:
        ds = ds.random_map(random_transform, seed=0 if seed is None else seed)
    ds = ds.batch(batch_size, drop_remainder=drop_remainder, batch_fn=batch_fn)
    ds = ds.repeat(num_epochs)
    options = grain.ReadOptions(num_threads=num_threads, prefetch_buffer_size=prefetch_buffer_size)
    return ds.to_iter_dataset(options)


class LengthGroupedSource:
    """`source` re-ordered so that each batch holds elements of similar length (less padding).

    Epoch e: a permutation drawn from (seed, e), cut into blocks of `megabatch` batches; each block is
    sorted by length and cut into batches; the epoch's batches are then shuffled, so long and short
    batches alternate. `len(source) mod batch_size` elements (different ones each epoch) are left
    out of an epoch so batches never span two. `epochs` epochs are laid out one after another; read
    it with make_pipeline(seed=None) and it repeats after them. Pure function of its arguments.
    """

    def __init__(self, source, lengths: Sequence[int], *, batch_size: int, seed: int, epochs: int,
                 megabatch: int = 8):
        n = len(source)
        if len(lengths) != n:
            raise ValueError(f"{len(lengths)} lengths for a source of {n} elements")
        if batch_size <= 0 or n < batch_size:
            raise ValueError(f"batch_size {batch_size} must be in 1..{n} (the source's size)")
        if epochs <= 0 or megabatch <= 0:
            raise ValueError(f"epochs ({epochs}) and megabatch ({megabatch}) must be positive")
        self.source = source
        lengths = np.asarray(lengths)
        block = batch_size * megabatch
        order = []
        for e in range(epochs):
            rng = np.random.default_rng([seed, e])
            perm = rng.permutation(n)[: (n // batch_size) * batch_size]
            batches = []
            for b in range(0, len(perm), block):
                part = perm[b:b + block]
                part = part[np.argsort(lengths[part], kind="stable")]
                batches += [part[k:k + batch_size] for k in range(0, len(part), batch_size)]
            for k in rng.permutation(len(batches)):
                order.extend(int(i) for i in batches[k])
        self.order = order

    def __len__(self):
        return len(self.order)

    def __getitem__(self, i: int):
        return self.source[self.order[i]]
