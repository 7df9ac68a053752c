"""The evaluate job restores a training stage's params from its Orbax checkpoints exactly."""
import jax
import jax.numpy as jnp
import numpy as np

from gui_jax.jobs.evaluate import load_stage_params
from gui_jax.train.checkpoint import Checkpointer
from gui_jax.train.state import init_train_state, make_optimizer


def test_load_stage_params_round_trip(tmp_path):
    params = {"layer": {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(3)}, "emb": jnp.full((4, 2), 2.5)}
    state = init_train_state(params, make_optimizer(1e-3, warmup_steps=2), seed=0)
    ck = Checkpointer(str(tmp_path / "ck"))
    ck.save(state, {"data": {"next_index": 1}}, force=True)
    ck.close()
    restored = load_stage_params(None, str(tmp_path / "ck"))
    got = jax.tree.leaves(restored)
    want = jax.tree.leaves(params)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# ---------------------------------------------------------------------------------------------
# No silent fallbacks: the job needs weights (or eval.untrained=True), says what it loaded, and
# never creates a read-only path.
import importlib.util  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from gui_jax.config_check import RunError  # noqa: E402
from gui_jax.jobs import evaluate as evaluate_job  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def tiny_eval_config(**eval_fields):
    spec = importlib.util.spec_from_file_location("recipe_evaluate", REPO / "configs" / "evaluate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = mod.get_config()
    c.data.num_train_episodes, c.data.num_test_episodes = 1, 1
    c.data.templates = ("music.play",)
    c.model.checkpoint, c.model.num_hidden_layers = "", 1
    for k, v in eval_fields.items():
        c.eval[k] = v
    return c


def test_evaluate_without_weights_refuses_before_any_work(tmp_path):
    with pytest.raises(RunError, match="eval.untrained=True"):
        evaluate_job.run(tiny_eval_config(), str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_missing_checkpoint_dir_is_not_created_and_one_level_up_hints(tmp_path):
    missing = tmp_path / "runs" / "qs" / "rl" / "checkpoints"
    with pytest.raises(RunError, match="no such directory"):
        load_stage_params(None, str(missing))
    assert not (tmp_path / "runs").exists()
    (tmp_path / "runs" / "qs" / "sft" / "checkpoints" / "3").mkdir(parents=True)
    (tmp_path / "runs" / "qs" / "rl" / "checkpoints" / "5").mkdir(parents=True)
    with pytest.raises(RunError, match=r"did you mean .*/runs/qs/rl/checkpoints\?.*sft/checkpoints"):
        load_stage_params(None, str(tmp_path / "runs" / "qs"))


@pytest.fixture
def fake_suite(monkeypatch):
    import gui_jax.eval.suite as suite
    seen = {}

    def fake_evaluate(agent, test_eps, test_tasks, pcfg, config):
        seen["params"] = jax.tree.leaves(agent.params)
        seen["episodes"] = len(test_eps)
        return {"SOP_Score": 0.25}
    monkeypatch.setattr(suite, "evaluate_agent", fake_evaluate)
    monkeypatch.setattr(suite, "format_table", lambda results: "TABLE")
    return seen


def test_evaluate_loads_latest_checkpoint_and_says_which(tmp_path, fake_suite, capsys):
    from gui_jax.rl.agent import Agent
    config = tiny_eval_config()
    agent = Agent(config, seed=config.seed)
    trained = jax.tree.map(lambda x: x + 0.5, agent.params)
    ck = Checkpointer(str(tmp_path / "stage" / "checkpoints"))
    ck.save(init_train_state(trained, make_optimizer(1e-3, warmup_steps=1), seed=0), {}, force=True, ckpt_id=7)
    ck.close()
    config = tiny_eval_config(checkpoint_dir=str(tmp_path / "stage" / "checkpoints"))
    evaluate_job.run(config, str(tmp_path / "work"))
    out = capsys.readouterr().out
    assert f"evaluating checkpoint {tmp_path / 'stage' / 'checkpoints'} step 7" in out
    weights = json.loads((tmp_path / "work" / "eval.json").read_text())["weights"]
    assert weights["kind"] == "orbax" and weights["step"] == 7
    # the checkpoint's run kept no config.json: the overlap of its training with these tasks is unknown, and said
    assert weights["held_out_vs_checkpoint"] is None and "the checkpoint's run recorded no data split" in out
    for a, b in zip(fake_suite["params"], jax.tree.leaves(trained)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert fake_suite["episodes"] == 1
    assert not (tmp_path / "work" / "episodes" / "train").exists()  # evaluate reads only the held-out side


def test_evaluate_untrained_only_when_asked(tmp_path, fake_suite, capsys):
    evaluate_job.run(tiny_eval_config(untrained=True), str(tmp_path))
    assert "UNTRAINED" in capsys.readouterr().out
    assert json.loads((tmp_path / "eval.json").read_text())["weights"]["kind"] == "untrained"
