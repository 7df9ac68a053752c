"""Pretraining loop pieces: curriculum and mix parsing, the stream's stage per update, reading evaluation."""
import numpy as np
import pytest

from gui_jax.train.pretrain import (CurriculumStream, Stage, Throughput, curriculum_of, parse_curriculum,
                                    parse_label_kinds, parse_mix)
from gui_jax.train.pretrain_data import Difficulty, quickstart_prompt_config


def test_curriculum_parses_stages_and_names_bad_ones():
    stages = parse_curriculum("4-8@0:500, 8-24@0.5:1000,12-40@1")
    assert stages == [Stage(Difficulty(4, 8, 0.0), 500), Stage(Difficulty(8, 24, 0.5), 1000),
                      Stage(Difficulty(12, 40, 1.0), None)]
    assert parse_curriculum("6") == [Stage(Difficulty(6, 6, 0.0), None)]
    with pytest.raises(ValueError, match="stage 1 '4-8@0' has no ':steps' but is not the last"):
        parse_curriculum("4-8@0,8-16@1")
    with pytest.raises(ValueError, match="stage 2 '8-x@1'"):
        parse_curriculum("4-8:10,8-x@1")
    with pytest.raises(ValueError, match="max_lines"):
        parse_curriculum("4-41@0")
    with pytest.raises(ValueError, match="empty"):
        parse_curriculum(" , ")


def test_label_kinds_reach_every_stage_and_bad_ones_are_named():
    cfg = {"curriculum": "4-8@0:10,12-40@1", "label_kinds": "words:1, pieces:3"}
    stages = curriculum_of(type("Cfg", (dict,), {"__getattr__": dict.__getitem__})(cfg))
    assert [s.difficulty.label_kinds for s in stages] == [{"words": 1.0, "pieces": 3.0}] * 2
    assert parse_label_kinds("") is None
    with pytest.raises(ValueError, match="'pieces'"):
        parse_label_kinds("pieces")
    with pytest.raises(ValueError, match="unknown kind 'emoji'"):
        parse_curriculum("4-8@0", parse_label_kinds("emoji:1"))


def test_mix_parses_weights_and_names_bad_entries():
    mix = parse_mix("tap:3, read:1")
    assert mix.names == ("tap", "read") and np.allclose(mix.probs, [0.75, 0.25])
    with pytest.raises(ValueError, match="unknown objective 'swipe'"):
        parse_mix("tap:1,swipe:1")
    with pytest.raises(ValueError, match="'tap'"):
        parse_mix("tap")


class _Policy:
    """encode() stand-in: token ids are the characters' code points (enough to see which stage made an item)."""

    def encode(self, prompt, target):
        from types import SimpleNamespace
        text = "".join(c.get("text", "") for m in prompt[0] for c in (m["content"] if isinstance(m["content"], list)
                                                                    else [{"text": m["content"]}]))
        ids = np.asarray([ord(ch) % 4000 for ch in text], np.int32)
        return SimpleNamespace(prompt_ids=ids, response_ids=np.asarray([ord(c) % 4000 for c in target], np.int32),
                               pixel_values=None, image_grid_thw=None)


def test_stream_draws_each_update_from_its_stage():
    from types import SimpleNamespace
    agent = SimpleNamespace(policy=_Policy())
    stream = CurriculumStream(agent, quickstart_prompt_config(), parse_curriculum("4-4@0:2,12-12@1"),
                              parse_mix("tap:1"), batch_size=3, seed=5)
    assert [stream.stage_of(s) for s in range(5)] == [0, 0, 1, 1, 1] and len(stream) == 2 ** 40
    lines = lambda i: stream.sources[stream.stage_of(i // 3)][i]["n_lines"]
    assert [lines(i) for i in range(6)] == [4] * 6 and [lines(i) for i in range(6, 12)] == [12] * 6
    np.testing.assert_array_equal(stream[7].prompt_ids, stream[7].prompt_ids)   # pure function of i
    assert not np.array_equal(stream[7].prompt_ids, stream[8].prompt_ids)


def test_throughput_counts_tokens_per_second_of_the_clock():
    now = [10.0]
    meter = Throughput(clock=lambda: now[0])
    meter.add(300)
    meter.add(100)
    now[0] = 12.0
    assert meter.rate() == 200.0
    now[0] = 13.0
    assert meter.rate() == 0.0


def test_stream_position_survives_a_restart_through_the_grain_state():
    from types import SimpleNamespace

    from gui_jax.data.pipeline import list_batch, make_pipeline
    agent = SimpleNamespace(policy=_Policy())

    def pipeline():
        stream = CurriculumStream(agent, quickstart_prompt_config(), parse_curriculum("4-6@0:2,8-10@1"),
                                  parse_mix("tap:1,read:1"), batch_size=2, seed=3)
        return iter(make_pipeline(stream, seed=None, batch_size=2, shard_index=0, shard_count=1,
                                  batch_fn=list_batch, num_threads=0, drop_remainder=True))

    ids = lambda batch: [s.prompt_ids.tolist() for s in batch]
    straight = pipeline()
    reference = [ids(next(straight)) for _ in range(5)]
    first = pipeline()
    for _ in range(3):
        next(first)
    state = first.get_state()                     # what fit stores beside the Orbax checkpoint
    resumed = pipeline()
    resumed.set_state(state)
    assert [ids(next(resumed)) for _ in range(2)] == reference[3:]


def test_a_stream_continued_from_a_snapshot_starts_at_that_update():
    from types import SimpleNamespace
    agent = SimpleNamespace(policy=_Policy())
    make = lambda first: CurriculumStream(agent, quickstart_prompt_config(), parse_curriculum("4-4@0:2,12-12@1"),
                                          parse_mix("tap:1"), batch_size=3, seed=5, first_step=first)
    whole, later = make(0), make(2)
    for i in range(4):
        np.testing.assert_array_equal(later[i].prompt_ids, whole[6 + i].prompt_ids)   # update 2 = items 6..8
    assert len(later) == len(whole) - 6


def test_worker_processes_make_the_same_batches_and_resume_from_their_state():
    from types import SimpleNamespace

    import ml_collections

    from gui_jax.models.processor import ImageProcessor
    from gui_jax.models.tokenizer import tiny_tokenizer
    from gui_jax.rl.jax_policy import ChatEncoder
    from gui_jax.train.pretrain import batch_iterator
    # the stream keeps the policy's picklable encoder, which worker processes receive a copy of
    agent = SimpleNamespace(policy=SimpleNamespace(encoder=ChatEncoder(tiny_tokenizer(), ImageProcessor())))
    stream = CurriculumStream(agent, quickstart_prompt_config(), parse_curriculum("4-6@0:2,8-10@1"),
                              parse_mix("tap:1,read:1"), batch_size=3, seed=3)
    cfg = lambda workers: ml_collections.ConfigDict({"batch_size": 3, "data_threads": 0, "data_workers": workers})
    ids = lambda batch: [s.prompt_ids.tolist() + s.response_ids.tolist() for s in batch]
    inline = batch_iterator(stream, cfg(0))
    reference = [ids(next(inline)) for _ in range(5)]
    spread = batch_iterator(stream, cfg(2))
    assert [ids(next(spread)) for _ in range(3)] == reference[:3]
    state = spread.get_state()
    resumed = batch_iterator(stream, cfg(2))
    resumed.set_state(state)
    assert [ids(next(resumed)) for _ in range(2)] == reference[3:]
    # closing ends every worker process (Grain's own close joins each for up to 25 s first) and leaves
    # Grain's join timeout as it was
    import multiprocessing

    from grain._src.python.dataset.transformations import process_prefetch

    from gui_jax.train.pretrain import close_batch_iterator
    grain_workers = lambda: [p for p in multiprocessing.active_children() if p.name.startswith("grain-")]
    assert len(grain_workers()) == 4
    timeout = process_prefetch._PROCESS_KILL_TIMEOUT_S
    close_batch_iterator(spread)
    close_batch_iterator(resumed)
    assert grain_workers() == [] and process_prefetch._PROCESS_KILL_TIMEOUT_S == timeout
