"""The reasoning stage through the CLI: in the quickstart (`reasoning_sft=True`: SFT → reasoning SFT on PhoneSim's
described thoughts → both evaluated, the reasoning row paired against SFT; a re-run resumes without redoing it) and
as the reasoning_sft job alone; the quickstart's warning when the decode budget cuts expert responses."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TINY = [
    "--config.data.num_train_episodes=2", "--config.data.num_test_episodes=1",
    "--config.data.templates=('music.play','tasks.complete')", "--config.data.train_seed_range=(0,4)",
    "--config.data.test_seed_range=(1000,1002)",
    "--config.model.checkpoint=", "--config.model.num_hidden_layers=1", "--config.model.max_new_tokens=48",
    "--config.model.sample_batch_size=4",
    "--config.sft.num_steps=2", "--config.sft.batch_size=2", "--config.sft.micro_batch_size=2",
    "--config.sft.warmup_steps=1", "--config.sft.checkpoint_every=2",
    "--config.reasoning_sft=True", "--config.reasoning.rounds=1", "--config.reasoning.sft.num_steps=3",
    "--config.reasoning.sft.batch_size=2", "--config.reasoning.sft.micro_batch_size=2",
    "--config.reasoning.sft.warmup_steps=1", "--config.reasoning.sft.checkpoint_every=3",
    "--config.semi_online_rl=False", "--config.eval.step_metrics=False", "--config.eval.max_steps=1",
]


def run(workdir: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu")
    p = subprocess.run([sys.executable, "-m", "gui_jax.main", "--config=configs/quickstart.py",
                        f"--workdir={workdir}", *TINY], capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def test_reasoning_stage_between_sft_and_rl(tmp_path):
    wd = tmp_path / "run"
    first = run(wd)
    results = json.loads((wd / "results.json").read_text())
    assert list(results["stages"]) == ["sft", "reasoning_sft"]
    assert len(results["stages"]["reasoning_sft"]["online_success"]) == 1
    saved = json.loads((wd / "reasoning" / "round_0" / "thoughts.json").read_text())
    assert saved["source"] == "described"
    # every expert step of the two train episodes (open the app, tap the named row, done) has its description
    thoughts = {(e, t): th for e, t, th in saved["thoughts"]}
    assert sorted(thoughts) == [(e, t) for e in range(2) for t in range(3)]
    assert [thoughts[(e, 0)] for e in range(2)] == ["open Music", "open Tasks"]
    assert {thoughts[(e, 2)] for e in range(2)} == {"declare the task done"}
    assert (wd / "reasoning" / "round_0" / "checkpoints" / "3").is_dir()
    row = next(line for line in (wd / "results.md").read_text().splitlines() if line.startswith("| reasoning_sft |"))
    assert "vs sft (p=" in row
    names = {json.loads(line)["name"] for line in (wd / "metrics.jsonl").read_text().splitlines()}
    assert any(n.startswith("reasoning_sft_r0/") for n in names), sorted(names)[:20]
    assert "round 0: 6 of 6 expert steps with a described thought" in first.stdout
    # finished stages are not redone: the re-run reads the stored thoughts and results
    again = run(wd)
    assert "sampling thoughts" not in again.stderr and json.loads((wd / "results.json").read_text())["stages"] == \
        results["stages"]


def test_the_job_names_expert_responses_the_decode_budget_cuts():
    from gui_jax.jobs.quickstart import uncut_responses_problem
    from gui_jax.rl.prompting import PromptConfig

    from support.fake_policy import make_episode
    pcfg = PromptConfig(observation="ui_text", target="element", history_turns=0, history_mode="compact")
    eps = [make_episode("g1", n=2), make_episode("g2", n=1)]
    chars = len('<think></think>\n<action>{"action": "click", "element": 0}</action>')
    count = len   # one token a character: every response here is `chars` long
    assert uncut_responses_problem(eps, pcfg, chars + 1, count) == ""
    msg = uncut_responses_problem(eps, pcfg, chars, count)
    assert msg.startswith(f"model.max_new_tokens = {chars} cuts 3 of 3 expert responses") and \
        msg.endswith(f"set at least {chars + 1}") and '"element": 1}' in msg


def test_the_reasoning_sft_job_alone_trains_round_0_on_described_thoughts(tmp_path):
    wd = tmp_path / "job"
    env = dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu")
    flags = [f for f in TINY if not f.startswith(("--config.reasoning_sft", "--config.semi_online_rl",
                                                  "--config.eval.", "--config.data.num_test"))]
    p = subprocess.run([sys.executable, "-m", "gui_jax.main", "--config=configs/reasoning_sft.py", f"--workdir={wd}",
                        *flags], capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads((wd / "reasoning_sft.json").read_text()) == [
        {"round": 0, "source": "described", "kept_steps": 6, "total_steps": 6, "kept_fraction": 1.0}]
    assert (wd / "round_0" / "checkpoints" / "3").is_dir()
