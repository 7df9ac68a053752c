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
