"""train/step_timing.py: the lines a training loop writes about where its time goes, from a fake clock and a fake
updater whose jit caches grow when a new shape compiles (exact text), and through fit on a tiny model."""
import numpy as np

from gui_jax.train.step_timing import StepTiming, compiled_count


class _Cache:
    def __init__(self):
        self.n = 0

    def _cache_size(self):
        return self.n


class _Updater:
    def __init__(self):
        self.zeros_jit, self.accumulate_jit, self.apply_jit = _Cache(), _Cache(), _Cache()


class _Clock:
    def __init__(self, ticks):
        self.ticks = iter(ticks)

    def __call__(self):
        return next(self.ticks)


def _mb(length, response=4):
    return {"input_ids": np.zeros((2, length), np.int32), "targets": np.zeros((2, response), np.int32)}


def test_first_batch_compiles_and_periodic_split_are_written():
    up, lines = _Updater(), []
    # started 0; update 1: begin 0, data 3, batching 3.5, update 10.5 (compiles); update 2: begin 10.75 (an
    # evaluation: other), data 11, batching 11.5, update 12
    timing = StepTiming("pretrain", up, lines.append, every=2,
                        clock=_Clock([0.0, 0.0, 3.0, 3.5, 10.5, 10.7, 11.0, 11.5, 12.0]))
    timing.begin()
    timing.data_done()
    timing.batching_done([_mb(8), _mb(16)])
    up.accumulate_jit.n, up.apply_jit.n, up.zeros_jit.n = 2, 1, 1
    timing.update_done(101)
    timing.begin()
    timing.data_done()
    timing.batching_done([_mb(8), _mb(16, response=6)])
    up.accumulate_jit.n = 3
    timing.update_done(102)
    assert lines == [
        "pretrain: first batch after 3.0 s",
        "pretrain: update 101 compiled 4 new executable(s) for micro-batches [(2, 8), (2, 16)] in 7.0 s",
        "pretrain: update 102 compiled 1 new executable(s) for micro-batches [(2, 8), (2, 16)] (other shapes new: "
        "targets=(2, 6)) in 0.5 s",
        "pretrain: updates 101-102: data wait 3.3 s, host batching 1.0 s, update 7.5 s, other (logs, evaluations, "
        "checkpoints) 0.2 s"]
    assert compiled_count(up) == 5 and compiled_count(object()) == 0
    # a new row length: arrays shaped by it follow input_ids and are not named
    timing.every, timing.clock = 0, _Clock([12.5, 13.0, 13.5, 20.0])
    timing.begin()
    timing.data_done()
    timing.batching_done([{"input_ids": np.zeros((2, 32)), "mask": np.zeros((2, 32)), "targets": np.zeros((2, 4))}])
    up.accumulate_jit.n = 4
    timing.update_done(103)
    assert lines[-1] == "pretrain: update 103 compiled 1 new executable(s) for micro-batches [(2, 32)] in 6.5 s"


def test_every_zero_writes_no_periodic_line():
    up, lines = _Updater(), []
    timing = StepTiming("sft", up, lines.append, every=0, clock=_Clock([0.0, 0.0, 1.0, 1.0, 2.0]))
    timing.begin()
    timing.data_done()
    timing.batching_done([_mb(4)])
    timing.update_done(1)
    assert lines == ["sft: first batch after 1.0 s"]


def test_fit_writes_where_its_time_goes(tmp_path, capsys):
    """Through fit: the first update compiles the updater's three functions; the same shape never again."""
    from gui_jax.train.fit import fit
    from tests.train.test_sigterm import _tiny_fit_parts
    agent, updater, data = _tiny_fit_parts()
    fit(agent, updater, data, num_steps=4, workdir=str(tmp_path), logger=None, prefix="tiny", micro_batch_size=1,
        checkpoint_every=100, timing_every=2)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("tiny: ") and "/4" not in ln]
    assert [ln.split(" after ")[0] for ln in lines[:1]] == ["tiny: first batch"]
    assert [ln.split(" in ")[0] for ln in lines[1:2]] == [
        "tiny: update 1 compiled 3 new executable(s) for micro-batches [(1, 64)]"]
    assert [ln.split(":", 2)[1] for ln in lines[2:]] == [" updates 1-2", " updates 3-4"]
