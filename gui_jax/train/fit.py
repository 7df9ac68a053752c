"""A resumable optimisation loop shared by the trainers (SFT, offline RL).

Each step draws one logical batch from a Grain iterator, splits it into micro-batches, applies
one exact accumulated update, logs, and checkpoints {params, optimizer, step, rng} plus the
iterator state, so a killed run resumes with the same data order and the same final params.
"""
from __future__ import annotations

import os
from typing import Callable, Iterator, Optional, Sequence

from absl import logging
from tqdm.auto import tqdm

from gui_jax.rl.batch import TrainSample, build_batch, split_micro_batches
from gui_jax.train.checkpoint import Checkpointer
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.state import TrainState, Updater, init_train_state


class StopRequested(RuntimeError):
    """Raised by the `stop_after_steps` knob (used to test kill-and-resume)."""


def fit(agent, updater: Updater, data_iter: Iterator[Sequence[TrainSample]], *, num_steps: int,
        workdir: str, logger: Optional[MetricsLogger], prefix: str, micro_batch_size: int,
        seed: int = 0, checkpoint_every: int = 50, stop_after_steps: Optional[int] = None,
        on_step: Optional[Callable[[int, dict], None]] = None,
        length_buckets: Optional[Sequence[int]] = None) -> TrainState:
    """Runs (or resumes) `num_steps` updates of agent.params; returns the final state."""
    ckpt = Checkpointer(os.path.join(workdir, "checkpoints"), save_every=checkpoint_every)
    # A copy: the updater donates (consumes) its params, and agent.params must stay valid.
    state = init_train_state(agent.copy_params(), updater.optimizer, seed)
    restored = ckpt.restore_latest(state)
    if restored is not None:
        state, extra = restored
        data_iter.set_state(extra["data"])
        logging.info("%s: resumed at step %d", prefix, state.step)
    kw = {} if length_buckets is None else {"length_buckets": length_buckets}
    pbar = tqdm(total=num_steps, initial=state.step, desc=prefix, dynamic_ncols=True, leave=False)
    steps_this_run = 0
    while state.step < num_steps:
        if stop_after_steps is not None and steps_this_run >= stop_after_steps:
            ckpt.save(state, {"data": data_iter.get_state()}, force=True)
            ckpt.close()
            raise StopRequested(f"{prefix}: stopped after {steps_this_run} steps as configured")
        samples = next(data_iter)
        rows = micro_batch_size
        micro = [build_batch(mb, agent.model_config, pad_id=agent.tokenizer.pad_id, rows=rows, **kw)
                 for mb in split_micro_batches(samples, micro_batch_size)]
        state, metrics = updater.step(state, micro)
        steps_this_run += 1
        if logger is not None:
            logger.write(state.step, metrics, prefix=prefix)
        if on_step is not None:
            on_step(state.step, metrics)
        pbar.update(1)
        pbar.set_postfix(loss=f"{metrics['loss']:.3f}")
        if ckpt.should_save(state.step) or state.step == num_steps:
            ckpt.save(state, {"data": data_iter.get_state()}, force=state.step == num_steps)
    pbar.close()
    ckpt.close()
    return state
