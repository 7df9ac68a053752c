"""SIGTERM (preemption) or a wall-time budget during `fit`: checkpoint at the step reached (exit code 143 for
SIGTERM, a normal return for the budget), the rerun resumes."""
import os
import signal
import subprocess
import sys
import time

import numpy as np

from gui_jax.train.fit import PREEMPTED_EXIT_CODE


def _tiny_fit_parts(optimizer=None):
    """(agent, updater, data): a 4-weight model on text-only samples whose stream position is its state."""
    import jax.numpy as jnp
    import optax

    from gui_jax.models.qwen2_5_vl.config import preset
    from gui_jax.rl.batch import TrainSample
    from gui_jax.train.state import Updater

    class Agent:
        model_config = preset("tiny")
        tokenizer = type("Tok", (), {"pad_id": 0})()

        def copy_params(self):
            return {"w": jnp.zeros((4,), jnp.float32)}

    class Data:
        def __init__(self):
            self.i = 0

        def __next__(self):
            self.i += 1
            return [TrainSample(np.arange(1, 4) + self.i, np.arange(2) + self.i)]

        def get_state(self):
            return {"i": self.i}

        def set_state(self, st):
            self.i = int(st["i"])

    def loss(params, batch, rng):
        target = jnp.sum(batch["input_ids"] * batch["loss_mask"]) / 100.0
        return jnp.sum((params["w"] - target) ** 2), jnp.float32(1.0), {}

    return Agent(), Updater(loss, optimizer or optax.sgd(0.1)), Data()


def _child(workdir: str, num_steps: int) -> None:
    """A tiny fit() run; prints 'step N' after each update."""
    from gui_jax.train.fit import fit

    def on_step(step, metrics):
        print(f"step {step}", flush=True)
        time.sleep(0.1)

    agent, updater, data = _tiny_fit_parts()
    fit(agent, updater, data, num_steps=num_steps, workdir=workdir, logger=None,
        prefix="sigterm-test", micro_batch_size=1, checkpoint_every=10_000, on_step=on_step)
    print("finished", flush=True)


def _run(workdir, num_steps):
    return subprocess.Popen([sys.executable, __file__, str(workdir), str(num_steps)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=os.path.dirname(__file__))


def test_sigterm_checkpoints_and_resume_continues(tmp_path):
    from gui_jax.train.checkpoint import Checkpointer
    proc = _run(tmp_path, 10_000)
    steps = []
    for line in proc.stdout:
        if line.startswith("step "):
            steps.append(int(line.split()[1]))
            if steps[-1] == 3:
                proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=120)
    assert rc == PREEMPTED_EXIT_CODE, rc
    reached = steps[-1]  # the step in flight when SIGTERM arrived is finished, then saved
    assert reached >= 3 and steps == list(range(1, reached + 1))
    ck = Checkpointer(str(tmp_path / "checkpoints"))
    assert list(ck.manager.all_steps()) == [reached]  # only the preemption checkpoint (no periodic ones)
    ck.close()
    # The rerun resumes after the saved step (data order included) and finishes normally.
    proc = _run(tmp_path, reached + 2)
    out = proc.communicate(timeout=120)[0].split()
    assert proc.returncode == 0
    assert " ".join(out) == f"step {reached + 1} step {reached + 2} finished"


def test_end_after_seconds_saves_and_returns_then_the_rerun_continues(tmp_path, monkeypatch):
    """A wall-time budget ends the run cleanly (no exception) with a checkpoint at the step reached; the clock is
    faked (one second per reading) so the step it stops at is exact."""
    import itertools

    from gui_jax.train import fit as fit_module
    from gui_jax.train.checkpoint import Checkpointer
    ticks = itertools.count()
    monkeypatch.setattr(fit_module, "time", type("Clock", (), {"time": staticmethod(lambda: float(next(ticks)))}))
    agent, updater, data = _tiny_fit_parts()
    state = fit_module.fit(agent, updater, data, num_steps=100, workdir=str(tmp_path), logger=None, prefix="budget",
                           micro_batch_size=1, checkpoint_every=10_000, end_after_seconds=3.5)
    assert state.step == 3 and data.i == 3          # readings 1, 2, 3 are under 3.5 s; reading 4 ends the run
    ck = Checkpointer(str(tmp_path / "checkpoints"))
    assert list(ck.manager.all_steps()) == [3]
    ck.close()
    agent, updater, data = _tiny_fit_parts()
    state = fit_module.fit(agent, updater, data, num_steps=5, workdir=str(tmp_path), logger=None, prefix="budget",
                           micro_batch_size=1, checkpoint_every=10_000)
    assert state.step == 5 and data.i == 5          # resumed at 3 with the stream's position



def test_a_resume_with_another_first_step_than_the_schedule_counted_stops_naming_the_right_one(tmp_path):
    """The learning-rate schedule counts updates from first_step; a resume that passes another first_step would
    shift it (a wsd anneal keyed on the wrong update never anneals), so it stops, naming the value to pass."""
    import pytest

    from gui_jax.core.config_schema import RunError
    from gui_jax.train import fit as fit_module
    from gui_jax.train.state import make_optimizer, schedule_count
    opt = make_optimizer(0.1, warmup_steps=1, schedule="wsd", total_steps=5, decay_steps=2)
    agent, updater, data = _tiny_fit_parts(opt)
    state = fit_module.fit(agent, updater, data, num_steps=13, workdir=str(tmp_path), logger=None, prefix="pt",
                           micro_batch_size=1, checkpoint_every=1, first_step=10)
    assert state.step == 13 and schedule_count(state.opt_state) == 3
    agent, updater, data = _tiny_fit_parts(opt)
    with pytest.raises(RunError, match=r"pt: the checkpoint of update 13 in .* counted 3 updates .* began at "
                                       r"update 10, not 0: resume with first_step=10$"):
        fit_module.fit(agent, updater, data, num_steps=15, workdir=str(tmp_path), logger=None, prefix="pt",
                       micro_batch_size=1, checkpoint_every=1)
    state = fit_module.fit(agent, updater, data, num_steps=15, workdir=str(tmp_path), logger=None, prefix="pt",
                           micro_batch_size=1, checkpoint_every=1, first_step=10)
    assert state.step == 15 and schedule_count(state.opt_state) == 5 and data.i == 5
    assert schedule_count(_tiny_fit_parts()[1].optimizer.init({"w": np.zeros(4)})) is None   # sgd: no schedule


if __name__ == "__main__":
    _child(sys.argv[1], int(sys.argv[2]))
