"""Bad command lines get one line on stderr naming the field and what is accepted, exit code 2,
before any heavy import (a stand-in `jax` package that refuses to import proves validation never
touches jax/flax), and --help / --print_config describe jobs, recipes and fields."""
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gui_jax import config_check
from gui_jax.jobs import JOBS

REPO = Path(__file__).resolve().parents[1]
MEASURED: dict[str, float] = {}


@pytest.fixture(scope="module")
def no_jax_env(tmp_path_factory):
    """PYTHONPATH with `jax` and `flax` packages that raise on import."""
    d = tmp_path_factory.mktemp("nojax")
    for name in ("jax", "flax", "orbax"):
        (d / name).mkdir()
        (d / name / "__init__.py").write_text(f"raise ImportError('{name} imported before the config was validated')\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(d), str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                                              if p])
    return env


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_cli(args, env, cwd=REPO):
    """(completed process, wall seconds, CPU seconds of the child)."""
    t0, c0 = time.perf_counter(), child_cpu()
    p = subprocess.run([sys.executable, "-m", "gui_jax.main", *args], capture_output=True, text=True, env=env,
                       cwd=cwd, timeout=120)
    return p, time.perf_counter() - t0, child_cpu() - c0


Q = "--config=configs/quickstart.py"
E = "--config=configs/evaluate.py"
G = "--config=configs/generate_episodes.py"
R = "--config=configs/reasoning_sft.py"

# (id, arguments, substrings the one-line error must contain: the field, and what is accepted)
CASES = [
    ("resolution_scalar", [Q, "--config.data.resolution=224"], ["config.data.resolution", "multiples of 28"]),
    ("resolution_not_28", [Q, "--config.data.resolution=(112,250)"], ["config.data.resolution", "multiples of 28"]),
    ("misspelt_field", [Q, "--config.sft.num_step=3"], ["config.sft has no field 'num_step'", "'num_steps'"]),
    ("unknown_block", [Q, "--config.bogus.x=1"], ["config has no field 'bogus'", "fields: data"]),
    ("int_type", [Q, "--config.sft.num_steps=abc"], ["--config.sft.num_steps=abc", "integer"]),
    ("bool_type", [Q, "--config.offline_rl_baseline=maybe"], ["offline_rl_baseline", "True or False"]),
    ("negative_lr", [Q, "--config.sft.learning_rate=-1"], ["config.sft.learning_rate", "> 0"]),
    ("gamma_range", [Q, "--config.rl.gamma=1.5"], ["config.rl.gamma", "≤ 1"]),
    ("stop_after_zero", [Q, "--config.sft.stop_after_steps=0"], ["config.sft.stop_after_steps", "≥ 1 or None"]),
    ("template_typo", [Q, "--config.data.templates=('music.play','clock.alrm_toggle')"],
     ["'clock.alrm_toggle'", "did you mean 'clock.alarm_toggle'", "accepted:"]),
    ("template_string", [Q, "--config.data.templates=nosuch"], ["config.data.templates", "unknown name 'nosuch'"]),
    ("split_typo", [Q, "--config.data.split=instence"], ["config.data.split", "'instance'",
                                                         "accepted: instance, template, app"]),
    ("difficulty", [Q, "--config.data.difficulties=('easy','extreme')"], ["'extreme'", "accepted: easy, medium, hard"]),
    ("seed_overlap", [Q, "--config.data.test_seed_range=(30,50)"], ["config.data.test_seed_range", "overlaps"]),
    ("preset", [Q, "--config.model.preset=7bb"], ["config.model.preset", "'7b'", "accepted: tiny, 3b, 7b"]),
    ("tokenizer", [Q, "--config.model.tokenizer=qwen2.5"], ["config.model.tokenizer", "'qwen25'", "tokenizer.json"]),
    ("tokenizer_phonesim", [Q, "--config.model.tokenizer=tiny_phonesm"], ["config.model.tokenizer", "'tiny_phonesim'",
                                                                           "SentencePiece .model path"]),
    ("hf_dir_missing", [Q, "--config.model.checkpoint=/nonexistent/qwen"], ["config.model.checkpoint",
                                                                          "no such directory"]),
    ("dialect", [Q, "--config.prompt.dialect=uitar"], ["config.prompt.dialect", "'uitars'"]),
    ("observation", [Q, "--config.prompt.observation=screen"], ["config.prompt.observation", "'screenshot'"]),
    ("element_needs_ui", [Q, "--config.prompt.observation=screenshot"], ["config.prompt.target", "ui_text"]),
    ("patch_strategy", [Q, "--config.rl.patch_strategy=thoughtfree"], ["config.rl.patch_strategy", "'thought_free'"]),
    ("aggregation", [Q, "--config.rl.aggregation=token-mean"], ["config.rl.aggregation", "'token_mean'"]),
    ("packing_no_row_length", [Q, "--config.rl.packing=True", "--config.rl.row_length=0"],
     ["config.rl.row_length", "packing = True needs"]),
    ("packing_seq_mean", [Q, "--config.rl.packing=True", "--config.rl.row_length=512",
                          "--config.rl.aggregation=seq_mean_token_mean"], ["config.rl.aggregation", "step_token_mean"]),
    ("kl_kind", [Q, "--config.rl.kl_kind=lowvar_kl"], ["config.rl.kl_kind", "'low_var_kl'"]),
    ("two_task_draws", [Q, "--config.rl.template_sampling=learnability", "--config.rl.revisit_uniform=0.5"],
     ["config.rl.template_sampling", "use one of them"]),
    ("reward_preset", [Q, "--config.rl.reward_preset=papers"], ["config.rl.reward_preset", "'paper'"]),
    ("unknown_flag", [Q, "--workdr=/tmp/x"], ["unknown flag --workdr", "'--workdir'"]),
    ("recipe_typo", ["--config=configs/quickstrat.py"], ["no such recipe file", "configs/quickstart.py"]),
    ("cosine_warmup", [Q, "--config.sft.num_steps=10"], ["config.sft.warmup_steps = 20", "fewer warm-up steps than "
                                                         "sft.num_steps (10)"]),
    ("no_config", [], ["--config is required", "configs/quickstart.py"]),
    ("positional", [Q, "sft.num_steps=3"], ["unexpected argument", "--config.<field>=<value>"]),
    ("evaluate_no_weights", [E, "--config.model.checkpoint="], ["eval.checkpoint_dir", "eval.untrained=True"]),
    ("evaluate_missing_dir", [E, "--config.eval.checkpoint_dir={tmp}/runs/nope/checkpoints"],
     ["config.eval.checkpoint_dir", "no such directory"]),
    ("evaluate_one_level_up", [E, "--config.eval.checkpoint_dir={tmp}/runs/qs"],
     ["config.eval.checkpoint_dir", "did you mean {tmp}/runs/qs/rl/checkpoints?", "sft/checkpoints"]),
    ("generate_side", [G, "--config.side=tst"], ["config.side", "'test'", "accepted: train, test"]),
    ("reasoning_samples", [R, "--config.reasoning.samples_per_step=0"], ["config.reasoning.samples_per_step", "≥ 1"]),
    ("reasoning_sft_block", [R, "--config.reasoning.sft.schedule=cosin"], ["config.reasoning.sft.schedule",
                                                                         "'cosine'"]),
    ("reasoning_seed_thoughts", [R, "--config.reasoning.seed_thoughts=describ"],
     ["config.reasoning.seed_thoughts", "'describe'"]),
    ("reasoning_stage_short_responses", [Q, "--config.reasoning_sft=True"],
     ["config.model.max_new_tokens", "at least 48"]),
    ("reasoning_stage_own_start", [Q, "--config.reasoning_sft=True", "--config.model.max_new_tokens=48",
                                   "--config.reasoning.init_checkpoint={tmp}/runs/qs/sft/checkpoints"],
     ["config.reasoning.init_checkpoint", "init.checkpoint_dir"]),
    ("rl_unseen_only_empty_pool", [Q, "--config.data.rl_unseen_only=True", "--config.data.rl_train_episodes=0"],
     ["config.data.rl_unseen_only", "rl_train_episodes above data.num_train_episodes (150)"]),
]


@pytest.fixture(scope="module")
def stage_tree(tmp_path_factory):
    """A run folder with sft/ and rl/ checkpoint folders (numbered step folders)."""
    tmp = tmp_path_factory.mktemp("cli")
    for stage in ("sft", "rl"):
        (tmp / "runs" / "qs" / stage / "checkpoints" / "4").mkdir(parents=True)
    return tmp


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_command_line_one_line_error(case, no_jax_env, stage_tree):
    name, args, needles = case
    args = [a.replace("{tmp}", str(stage_tree)) for a in args]
    p, seconds, cpu = run_cli(args + [f"--workdir={stage_tree}/w_{name}"], no_jax_env)
    MEASURED[name] = (seconds, cpu)
    err = p.stderr.strip()
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert "Traceback" not in p.stderr
    for needle in needles:
        assert needle.replace("{tmp}", str(stage_tree)) in err, (needle, err)
    # Nothing was created: no workdir, and a missing checkpoint folder stays missing.
    assert not (stage_tree / f"w_{name}").exists()
    assert not (stage_tree / "runs" / "nope").exists()
    # Target 2 s. CPU time is what the command costs; wall time also waits for a shared, loaded CPU.
    assert cpu < 5.0, f"{name} used {cpu:.1f}s of CPU"
    assert seconds < 60.0, f"{name} took {seconds:.1f}s"


def test_report_error_times():
    if MEASURED:
        walls, cpus = [w for w, _ in MEASURED.values()], [c for _, c in MEASURED.values()]
        print(f"\nCLI errors over {len(MEASURED)} cases: wall max {max(walls):.2f}s mean {sum(walls) / len(walls):.2f}s; "
              f"CPU max {max(cpus):.2f}s mean {sum(cpus) / len(cpus):.2f}s; load {os.getloadavg()[0]:.1f}")
    assert len(CASES) >= 20


def test_help_lists_jobs_recipes_and_print_config(no_jax_env):
    p, _, _ = run_cli(["--help"], no_jax_env)
    assert p.returncode == 0, p.stderr
    for name, entry in JOBS.items():
        assert name in p.stdout and entry.description in p.stdout
    for recipe in ("configs/quickstart.py", "configs/evaluate.py", "configs/reasoning_sft.py"):
        assert recipe in p.stdout
    assert "--print_config" in p.stdout and "--overwrite" in p.stdout


def test_print_config_shows_fields_with_meaning(no_jax_env):
    p, _, _ = run_cli([Q, "--config.sft.num_steps=7", "--print_config"], no_jax_env)
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("sft.num_steps = "))
    assert "7" in line and "# optimizer steps" in line
    assert any(ln.startswith("data.resolution = (112, 252)") and "pixels" in ln for ln in p.stdout.splitlines())


def test_name_lists_equal_their_sources():
    from gui_jax.core.dialects import DIALECTS
    from gui_jax.envs.sim.templates.base import DIFFICULTY_LEVEL
    from gui_jax.models.qwen2_5_vl.config import _PRESETS
    from gui_jax.rewards.rules import REWARD_PRESETS
    from gui_jax.rl.losses import AGGREGATIONS, KL_KINDS
    from gui_jax.rl.prompting import OBSERVATION_MODES
    assert config_check.DIALECTS == tuple(DIALECTS)
    assert set(config_check.DIFFICULTIES) == set(DIFFICULTY_LEVEL)
    assert set(config_check.PRESETS) == set(_PRESETS)
    assert config_check.REWARD_PRESETS == tuple(REWARD_PRESETS)
    assert config_check.AGGREGATIONS == tuple(AGGREGATIONS)
    assert config_check.KL_KINDS == tuple(KL_KINDS)
    assert config_check.OBSERVATIONS == tuple(OBSERVATION_MODES)


def test_every_recipe_passes_validation():
    import importlib.util
    for path in sorted((REPO / "configs").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"recipe_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        config = mod.get_config()
        if config.get("job") == "evaluate":
            config.eval.untrained = True  # the recipe leaves the weights to the command line
        config_check.check_config(config)


def test_literal_overrides_of_experiment_scripts():
    from gui_jax.jobs import literal_overrides
    assert literal_overrides(["data.templates=('a','b')", "online.iterations=48", "x.y=-1e-3"]) == {
        "data.templates": ("a", "b"), "online.iterations": 48, "x.y": -1e-3}
    assert literal_overrides([]) == {}
    with pytest.raises(SystemExit, match=r"--set 'bad': expected FIELD=VALUE"):
        literal_overrides(["bad"])
    with pytest.raises(SystemExit, match=r"--stage '=3': expected FIELD=VALUE"):
        literal_overrides(["=3"], flag="--stage")
    with pytest.raises(SystemExit, match=r"--set 'a=runs/x': VALUE is not a Python literal"):
        literal_overrides(["a=runs/x"])
