"""A resumable optimisation loop shared by the trainers (SFT, offline RL).

Each step draws one logical batch from a Grain iterator, splits it into micro-batches, applies
one exact accumulated update, logs, and checkpoints {params, optimizer, step, rng} plus the
iterator state, so a killed run resumes with the same data order and the same final params.

Preemption (TPU maintenance, spot VMs, Kubernetes eviction send SIGTERM): `fit` and the RL loop install
a SIGTERM handler that only sets a flag; after the step in flight they save a checkpoint at the step
reached and raise `Preempted`, a `SystemExit` with code PREEMPTED_EXIT_CODE (143 = 128 + SIGTERM, the
code schedulers read as "terminated, restart me"). Re-running the same command resumes from it.

Packing (`packing=True`, `row_length`): several trained steps per row (gui_jax/rl/batch.py); the
micro-batch then holds `micro_batch_size` packed rows.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from typing import Callable, Iterator, Optional, Sequence

from absl import logging
from gui_jax.core.config_schema import RunError
from gui_jax.core.progress import progress

from gui_jax.rl.batch import DEFAULT_LENGTH_BUCKETS, TrainSample, make_micro_batches
from gui_jax.train.checkpoint import Checkpointer, checkpoint_metadata
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.state import TrainState, Updater, init_train_state, schedule_count
from gui_jax.train.step_timing import StepTiming


class StopRequested(RuntimeError):
    """Raised by the `stop_after_steps` knob (used to test kill-and-resume)."""


PREEMPTED_EXIT_CODE = 143  # 128 + SIGTERM
_SIGTERM = threading.Event()
_INSTALLED = threading.Lock()
_installed = False


class Preempted(SystemExit):
    """SIGTERM arrived: a checkpoint at the step reached was written; the process exits with code 143."""

    def __init__(self, message: str):
        super().__init__(PREEMPTED_EXIT_CODE)
        self.message = message

    def __str__(self) -> str:
        return self.message


def install_sigterm_handler() -> bool:
    """Makes SIGTERM set a flag (read by `sigterm_requested`) instead of killing the process.

    Idempotent; returns False where a handler cannot be installed (not the main thread).
    """
    global _installed
    with _INSTALLED:
        if _installed:
            return True
        if threading.current_thread() is not threading.main_thread():
            return False

        def on_sigterm(signum, frame):
            _SIGTERM.set()
            logging.warning("SIGTERM: finishing the current step, then checkpointing and exiting")
        signal.signal(signal.SIGTERM, on_sigterm)
        _installed = True
        return True


def sigterm_requested() -> bool:
    return _SIGTERM.is_set()


def clear_sigterm() -> None:
    """Forgets a received SIGTERM (tests, or a caller that handled it)."""
    _SIGTERM.clear()


def fit(agent, updater: Updater, data_iter: Iterator[Sequence[TrainSample]], *, num_steps: int,
        workdir: str, logger: Optional[MetricsLogger], prefix: str, micro_batch_size: int,
        seed: int = 0, checkpoint_every: int = 50, stop_after_steps: Optional[int] = None,
        on_step: Optional[Callable[[int, dict], None]] = None,
        length_buckets: Optional[Sequence[int]] = None, packing: bool = False,
        row_length: Optional[int] = None, micro_rows: str = "fixed", checkpoint_seconds: float = 0.0,
        after_step: Optional[Callable[[TrainState, dict], None]] = None, first_step: int = 0,
        end_after_seconds: float = 0.0, checkpoints_kept: int = 3, timing_every: int = 100) -> TrainState:
    """Runs (or resumes) `num_steps` updates of agent.params; returns the final state.

    Checkpoints every `checkpoint_every` steps (the newest `checkpoints_kept` stay on disk; 0 = all) and, with `checkpoint_seconds` > 0, also once that much
    wall time has passed since the last save. `after_step(state, metrics)` sees the updated state (for
    evaluations during training); `on_step(step, metrics)` only the step. `first_step`: the step number a fresh
    run (no checkpoint yet) starts counting from, e.g. when it continues from a weights-only snapshot.
    `end_after_seconds` > 0: this run ends cleanly (checkpoint saved, state returned) once that much wall time
    has passed, so a short lease still ends with a usable result; running again continues. The log says where
    the time goes (train/step_timing.py): the first batch's wait, each compiling update, and every
    `timing_every` updates (0: never) the data wait, host batching and update seconds.

    On SIGTERM: checkpoint at the step reached, then `Preempted` (exit code 143).
    """
    install_sigterm_handler()
    ckpt = Checkpointer(os.path.join(workdir, "checkpoints"), save_every=checkpoint_every,
                        max_to_keep=checkpoints_kept,
                        save_every_seconds=checkpoint_seconds,
                        metadata=checkpoint_metadata(agent))
    # A copy: the updater donates (consumes) its params, and agent.params must stay valid.
    state = init_train_state(agent.copy_params(), updater.optimizer, seed)
    if first_step:
        state = dataclasses.replace(state, step=int(first_step))
    restored = ckpt.restore_latest(state)
    if restored is not None:
        state, extra = restored
        count = schedule_count(state.opt_state)
        if count is not None and count != state.step - first_step:   # the schedule (a wsd anneal) would shift
            raise RunError(f"{prefix}: the checkpoint of update {state.step} in {ckpt.directory} counted {count} "
                           f"updates of its learning-rate schedule, so its run began at update "
                           f"{state.step - count}, not {first_step}: resume with first_step={state.step - count}")
        data_iter.set_state(extra["data"])
        logging.info("%s: resumed at step %d", prefix, state.step)
    buckets = DEFAULT_LENGTH_BUCKETS if length_buckets is None else tuple(length_buckets)
    pbar = progress(total=num_steps, initial=state.step, desc=prefix, leave=False)
    steps_this_run, started = 0, time.time()
    timing = StepTiming(prefix, updater, pbar.write, every=timing_every)
    while state.step < num_steps:
        if end_after_seconds > 0 and time.time() - started >= end_after_seconds:
            ckpt.save(state, {"data": data_iter.get_state()}, force=True)
            logging.info("%s: ended at step %d after %.0f s as configured", prefix, state.step, end_after_seconds)
            break
        if sigterm_requested():
            ckpt.save(state, {"data": data_iter.get_state()}, force=True)
            ckpt.close()
            pbar.close()
            raise Preempted(f"{prefix}: SIGTERM; checkpoint saved at step {state.step} in {ckpt.directory}")
        if stop_after_steps is not None and steps_this_run >= stop_after_steps:
            ckpt.save(state, {"data": data_iter.get_state()}, force=True)
            ckpt.close()
            raise StopRequested(f"{prefix}: stopped after {steps_this_run} steps as configured")
        timing.begin()
        samples = next(data_iter)
        timing.data_done()
        micro = make_micro_batches(samples, agent.model_config, pad_id=agent.tokenizer.pad_id,
                                   micro_batch_size=micro_batch_size, packing=packing, row_length=row_length,
                                   length_buckets=buckets, micro_rows=micro_rows)
        timing.batching_done(micro)
        state, metrics = updater.step(state, micro)
        timing.update_done(state.step)
        steps_this_run += 1
        if logger is not None:
            logger.write(state.step, metrics, prefix=prefix)
        if on_step is not None:
            on_step(state.step, metrics)
        if after_step is not None:
            after_step(state, metrics)
        pbar.update(1)
        pbar.set_postfix(loss=f"{metrics['loss']:.3f}")
        if ckpt.should_save(state.step) or state.step == num_steps:
            ckpt.save(state, {"data": data_iter.get_state()}, force=state.step == num_steps)
    pbar.close()
    ckpt.close()
    return state
