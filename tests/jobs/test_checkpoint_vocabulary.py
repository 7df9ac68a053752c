"""A stage checkpoint is only loaded under the vocabulary its run was trained with."""
import json
import types

import numpy as np
import pytest

from gui_jax.jobs.common import RunError, set_agent_params, trained_vocabulary
from gui_jax.rl.agent import vocabulary_name


def _run(tmp_path, tokenizer: str, preset: str = "tiny", checkpoint: str = ""):
    ckpt = tmp_path / "run" / "sft" / "checkpoints"
    ckpt.mkdir(parents=True)
    cfg = {"model.tokenizer": tokenizer, "model.preset": preset, "model.checkpoint": checkpoint}
    (tmp_path / "run" / "config.json").write_text(json.dumps({"quickstart": {"config": cfg}}))
    return str(ckpt)


def _agent(vocabulary):
    agent = types.SimpleNamespace(params={"w": np.zeros(2, np.float32)}, vocabulary=vocabulary)
    agent.set_params = lambda p: setattr(agent, "params", p)
    return agent


def test_vocabulary_names():
    assert vocabulary_name("auto", "tiny") == "tiny" and vocabulary_name("auto", "7b") == "qwen25"
    assert vocabulary_name("auto", "tiny", "/some/hf_dir") is None  # the HF directory's own tokenizer
    assert vocabulary_name("tiny_phonesim", "tiny") == "tiny_phonesim"


def test_mismatched_vocabulary_is_refused_with_the_fix(tmp_path):
    ckpt = _run(tmp_path, "tiny_phonesim")
    assert trained_vocabulary(ckpt) == "tiny_phonesim"
    agent = _agent("tiny")
    with pytest.raises(RunError, match=r"trained with vocabulary 'tiny_phonesim' but model.tokenizer gives 'tiny'.*"
                                       r"--config.model.tokenizer=tiny_phonesim"):
        set_agent_params(agent, {"w": np.ones(2, np.float32)}, ckpt)
    assert float(agent.params["w"].sum()) == 0.0  # nothing was loaded


def test_matching_or_unknown_vocabulary_loads(tmp_path):
    ckpt = _run(tmp_path, "auto")  # auto + tiny preset = the shipped tiny vocabulary
    agent = _agent("tiny")
    set_agent_params(agent, {"w": np.ones(2, np.float32)}, ckpt)
    np.testing.assert_array_equal(np.asarray(agent.params["w"]), [1.0, 1.0])
    bare = tmp_path / "bare" / "sft" / "checkpoints"  # no config.json (e.g. an experiment script's run)
    bare.mkdir(parents=True)
    assert trained_vocabulary(str(bare)) is None
    set_agent_params(_agent("tiny_phonesim"), {"w": np.ones(2, np.float32)}, str(bare))


def test_each_checkpoint_step_records_its_vocabulary_and_a_copied_step_is_checked(tmp_path):
    """A step folder copied out of its run (to continue a stage in another workdir, say) keeps the check:
    the vocabulary travels in the step's side state, not only in the run's config.json."""
    import shutil

    import jax.numpy as jnp

    from gui_jax.jobs.common import recorded_vocabulary
    from gui_jax.train.checkpoint import Checkpointer, checkpoint_metadata
    from gui_jax.train.state import init_train_state, make_optimizer

    writer = _agent("tiny_phonesim")
    assert checkpoint_metadata(writer) == {"vocabulary": "tiny_phonesim"}
    assert checkpoint_metadata(_agent(None)) == {}  # a HF directory's own tokenizer: nothing to record
    src = tmp_path / "run" / "sft" / "checkpoints"  # no config.json anywhere
    ckpt = Checkpointer(str(src), metadata=checkpoint_metadata(writer))
    state = init_train_state({"w": jnp.ones(2)}, make_optimizer(1e-3), 0)
    ckpt.save(state, {"data": {"next": 7}}, force=True)
    restored, extra = ckpt.restore(0, state)
    ckpt.close()
    assert extra == {"vocabulary": "tiny_phonesim", "data": {"next": 7}}  # side state kept beside it
    copy = tmp_path / "elsewhere" / "sft" / "checkpoints"
    shutil.copytree(src / "0", copy / "0")
    assert recorded_vocabulary(str(copy)) == trained_vocabulary(str(copy)) == "tiny_phonesim"
    with pytest.raises(RunError, match="trained with vocabulary 'tiny_phonesim' but model.tokenizer gives 'tiny'"):
        set_agent_params(_agent("tiny"), {"w": np.ones(2, np.float32)}, str(copy))
    set_agent_params(_agent("tiny_phonesim"), {"w": np.ones(2, np.float32)}, str(copy))
    # the recorded vocabulary wins over a config.json that says otherwise
    cfg = {"model.tokenizer": "auto", "model.preset": "tiny", "model.checkpoint": ""}
    (tmp_path / "elsewhere" / "config.json").write_text(json.dumps({"quickstart": {"config": cfg}}))
    assert trained_vocabulary(str(copy)) == "tiny_phonesim"
    assert recorded_vocabulary(str(tmp_path / "missing")) is None
