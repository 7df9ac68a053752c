"""Orbax checkpoints of a TrainState plus JSON side-state (data iterator, samplers, curricula).

One folder per step under `<workdir>/checkpoints`; `restore_latest` returns None on a fresh run.
"""
from __future__ import annotations

import os
import time
from typing import Any, Optional

import jax
import orbax.checkpoint as ocp

from gui_jax.train.state import TrainState


def checkpoint_metadata(agent) -> dict:
    """What every checkpoint of `agent`'s training records about it: the vocabulary its token ids belong
    to (omitted when the agent reads a HF directory's own tokenizer). Stored per step, so a step folder
    copied elsewhere still says which vocabulary it needs (jobs/common.trained_vocabulary)."""
    vocabulary = getattr(agent, "vocabulary", None)
    return {} if vocabulary is None else {"vocabulary": vocabulary}


class Checkpointer:
    def __init__(self, directory: str, *, max_to_keep: int = 3, save_every: int = 100,
                 metadata: Optional[dict] = None, save_every_seconds: float = 0.0,
                 clock=time.monotonic):
        """save_every: steps between saves (0: never by count); save_every_seconds > 0 also saves once that
        much time has passed since the last save, so hours-long runs on slow machines lose at most that.
        max_to_keep: the newest checkpoints kept on disk; 0 = all of them."""
        self.directory = os.path.abspath(directory)
        self.save_every = save_every
        self.save_every_seconds = float(save_every_seconds)
        self._clock = clock
        self._last_save = clock()
        self.metadata = dict(metadata or {})  # merged into every step's `extra` (checkpoint_metadata)
        self.manager = ocp.CheckpointManager(
            self.directory, options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep or None, create=True))

    def should_save(self, step: int) -> bool:
        if self.save_every > 0 and step % self.save_every == 0:
            return True
        return self.save_every_seconds > 0 and self._clock() - self._last_save >= self.save_every_seconds

    def save(self, state: TrainState, extra: Optional[dict] = None, *, force: bool = False,
             ckpt_id: Optional[int] = None) -> bool:
        """Saves the state and a JSON-serialisable `extra` dict; blocks until written.

        ckpt_id: the checkpoint's number (default: the optimizer step); RL trainers number
        checkpoints by iteration, since an iteration may make zero or several optimizer steps.
        """
        ckpt_id = state.step if ckpt_id is None else ckpt_id
        if ckpt_id in self.manager.all_steps():
            return False  # already written (e.g. a stop request right after a periodic save)
        saved = self.manager.save(
            ckpt_id,
            args=ocp.args.Composite(state=ocp.args.StandardSave(state.as_pytree()),
                                    extra=ocp.args.JsonSave({**self.metadata, **(extra or {})})),
            force=force)
        self.manager.wait_until_finished()
        self._last_save = self._clock()
        return saved

    def latest_step(self) -> Optional[int]:
        return self.manager.latest_step()

    def restore(self, step: int, template: TrainState) -> tuple[TrainState, dict]:
        """Restores step `step` with shapes/dtypes/shardings taken from `template`."""
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, template.as_pytree())
        out = self.manager.restore(
            step, args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract),
                                          extra=ocp.args.JsonRestore()))
        return TrainState.from_pytree(out["state"]), dict(out["extra"] or {})

    def restore_latest(self, template: TrainState) -> Optional[tuple[TrainState, dict]]:
        step = self.latest_step()
        return None if step is None else self.restore(step, template)

    def close(self) -> None:
        self.manager.close()


def save_params(params: Any, directory: str) -> None:
    """Params only (e.g. a finished stage's weights), restorable with `load_params`."""
    ckptr = ocp.StandardCheckpointer()
    ckptr.save(os.path.abspath(directory), params, force=True)
    ckptr.wait_until_finished()


def load_params(directory: str, template: Any) -> Any:
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, template)
    return ocp.StandardCheckpointer().restore(os.path.abspath(directory), abstract)
