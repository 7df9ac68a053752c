"""An export records the prompt format its weights were trained with (gui_jax_export.json), and a job that starts
from it with another format is refused in one line, naming the field to set."""
import json
import os
import shutil

import ml_collections
import pytest

from gui_jax.config_check import ConfigError, check_config
from gui_jax.models.export_record import exported_prompt_format, prompt_format, trained_prompt_format
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.config_blocks import model_block, prompt_block


def test_the_format_comes_from_a_prompt_block_or_the_runs_config(tmp_path):
    assert prompt_format(PromptConfig(answer_spaced=True)) == {"answer_spaced": True}
    assert prompt_format({"answer_spaced": False, "word_tokens": True}) == {"answer_spaced": False}
    run = tmp_path / "run"
    (run / "sft" / "checkpoints").mkdir(parents=True)
    (run / "checkpoints").mkdir()
    # the workdir's config snapshot (jobs/common.write_snapshot): the latest job with a prompt block decides
    (run / "config.json").write_text(json.dumps({
        "quickstart": {"saved_at": "2026-12-05T20:00:00", "config": {"prompt.answer_spaced": False}},
        "pretrain": {"saved_at": "2026-12-05T21:00:00", "config": {"prompt.answer_spaced": True,
                                                                  "prompt.max_ui_lines": 40}},
        "export": {"saved_at": "2026-12-05T22:00:00", "config": {"export.dtype": ""}}}))
    assert trained_prompt_format(str(run / "checkpoints")) == {"answer_spaced": True}        # <workdir>/checkpoints
    assert trained_prompt_format(str(run / "sft" / "checkpoints")) == {"answer_spaced": True}  # a stage's
    assert trained_prompt_format(str(tmp_path / "elsewhere" / "checkpoints")) == {}
    assert exported_prompt_format(str(tmp_path)) == {}                                        # no record


def test_a_checkpoint_pretrained_with_spaced_answers_needs_them(tmp_path):
    from gui_jax.models.builtin import resolve_checkpoint
    shutil.copy(os.path.join(resolve_checkpoint("builtin:tiny-base"), "config.json"), tmp_path / "config.json")
    (tmp_path / "gui_jax_export.json").write_text(json.dumps({"source": {}, "prompt": {"answer_spaced": True}}))
    m = model_block()
    m.checkpoint = str(tmp_path)
    config = ml_collections.ConfigDict({"job": "evaluate", "model": m, "prompt": prompt_block()})
    with pytest.raises(ConfigError, match=r"config.prompt.answer_spaced = False: model.checkpoint '.*' was trained "
                                          r"with prompt.answer_spaced = True \(gui_jax_export.json\): set "
                                          r"--config.prompt.answer_spaced=True"):
        check_config(config)
    config.prompt.answer_spaced = True
    check_config(config)


def test_export_agent_writes_the_format(tmp_path):
    from gui_jax.jobs.export import export_agent
    from gui_jax.rl.agent import Agent
    agent = Agent(ml_collections.ConfigDict({"model": model_block()}), seed=0)
    export_agent(agent, str(tmp_path / "hf"), source={"job": "test"}, prompt={"answer_spaced": True})
    record = json.loads((tmp_path / "hf" / "gui_jax_export.json").read_text())
    assert record["prompt"] == {"answer_spaced": True} and record["source"] == {"job": "test"}
    assert exported_prompt_format(str(tmp_path / "hf")) == {"answer_spaced": True}
    export_agent(agent, str(tmp_path / "plain"))
    assert "prompt" not in json.loads((tmp_path / "plain" / "gui_jax_export.json").read_text())


def test_stage_checkpoints_of_a_spaced_run_need_the_flag_too(tmp_path):
    """eval.checkpoint_dir / init.checkpoint_dir: the format of the run that wrote them (its config snapshot)."""
    (tmp_path / "sft" / "checkpoints" / "400").mkdir(parents=True)   # a numbered step folder
    (tmp_path / "config.json").write_text(json.dumps(
        {"quickstart": {"saved_at": "2026-12-05T20:00:00", "config": {"prompt.answer_spaced": True}}}))
    config = ml_collections.ConfigDict({"job": "evaluate", "model": model_block(), "prompt": prompt_block(),
                                        "eval": {"checkpoint_dir": str(tmp_path / "sft" / "checkpoints")}})
    with pytest.raises(ConfigError, match=r"config.prompt.answer_spaced = False: eval.checkpoint_dir '.*' was "
                                          r"trained with prompt.answer_spaced = True \(its run's config.json\)"):
        check_config(config)
    config.prompt.answer_spaced = True
    check_config(config)


def test_every_recipe_that_starts_from_the_shipped_base_writes_its_format():
    """The shipped base records its prompt format; each recipe in configs/ whose model starts from it must use
    that format (a recipe left on the other one would fail at its first run, naming the flag)."""
    import glob

    from gui_jax.jobs import load_config
    from gui_jax.models.builtin import resolve_checkpoint
    shipped = exported_prompt_format(resolve_checkpoint("builtin:tiny-base"))
    assert shipped == {"answer_spaced": True}
    starting = []
    for path in sorted(glob.glob("configs/*.py")):
        config = load_config(path)
        if (config.get("model") or {}).get("checkpoint") != "builtin:tiny-base":
            continue
        starting.append(os.path.basename(path))
        assert prompt_format(config.prompt) == shipped, path
        check_config(config)
    assert {"quickstart.py", "base_eval.py", "reward_model.py", "grpo_online.py"} <= set(starting), starting
