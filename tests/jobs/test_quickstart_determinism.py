"""Runs of a shortened quickstart with one config and seed give identical results.json stages
and the same table (timings aside). Each run is its own process, with a different PYTHONHASHSEED,
so an order that depends on string hashing (set/dict iteration) would show up as a difference.
Budget: ≈ 60 s of CPU for the first run (mostly compilation); the later runs reuse its compiled programs."""
import json
import math
import os
import subprocess
import sys

from gui_jax.host_malloc import glibc_version

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TINY = [
    "--config.data.train_seed_range=(0,6)", "--config.data.test_seed_range=(1000,1002)",
    "--config.data.templates=('messages.open_thread','clock.alarm_toggle')",
    "--config.data.num_train_episodes=6", "--config.data.num_test_episodes=4",
    "--config.model.max_new_tokens=20", "--config.model.sample_batch_size=16",
    "--config.sft.num_steps=3", "--config.sft.batch_size=4", "--config.sft.micro_batch_size=4",
    "--config.sft.warmup_steps=1", "--config.sft.learning_rate=0.01",
    "--config.rl.iterations=1", "--config.rl.episodes_per_iteration=2", "--config.rl.num_rollouts=2",
    "--config.rl.dynamic_sampling=True", "--config.rl.dynamic_sampling_max_tries=2", "--config.rl.micro_batch_size=8",
    "--config.eval.max_steps=3",
    "--config.eval.before_training=True",  # the quickstart skips it by default; the untrained row stays tested
]


def _launch(workdir, hashseed, *extra, host_malloc="keep"):
    env = dict(os.environ, PYTHONHASHSEED=str(hashseed), JAX_PLATFORMS="cpu", GUI_JAX_HOST_MALLOC=host_malloc)
    cmd = [sys.executable, "-m", "gui_jax.main", "--config", os.path.join(REPO, "configs", "quickstart.py"),
           f"--workdir={workdir}", *TINY, *extra]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_quickstart_twice_identical(tmp_path):
    """A full run (SFT + semi-online RL), the SFT-alone run (semi_online_rl=False, no offline baseline: the start
    other RL specs share) and a run started from the SFT-alone run's checkpoints (init.checkpoint_dir, no SFT of its
    own), each under its own PYTHONHASHSEED: the SFT-alone run trains the very SFT of the full run, and the run from
    its checkpoints repeats the full run's RL stage and table exactly, also under the other host allocator policy
    (gui_jax/host_malloc.py: where memory comes from changes no number)."""
    outs = []   # one run after the other: the later ones reuse the first one's programs (the suite's XLA cache)
    for workdir, hashseed, extra in ((tmp_path / "full", 1, ()),
                                     (tmp_path / "sft_alone", 3, ("--config.semi_online_rl=False",))):
        proc = _launch(str(workdir), hashseed, *extra)
        log, _ = proc.communicate(timeout=1800)  # generous for loaded machines
        assert proc.returncode == 0, log[-3000:]
        outs.append(_outputs(workdir))
    (a, md_a, log_a), (alone, _, log_alone) = outs
    assert list(alone["stages"]) == ["untrained", "sft"] and all(alone["stages"][k] == a["stages"][k] for k in
                                                                 alone["stages"])
    sft_log = lambda log: [r for r in log if r["name"].startswith("sft/") and "seconds" not in r["name"]]
    assert len(sft_log(log_a)) > 10 and sft_log(log_alone) == sft_log(log_a)
    assert not (tmp_path / "sft_alone" / "rl").exists() and "train_semi_online_rl" not in alone["profile"]
    sft_checkpoints = tmp_path / "sft_alone" / "sft" / "checkpoints"
    proc = _launch(str(tmp_path / "from_sft"), 4, f"--config.init.checkpoint_dir={sft_checkpoints}",
                   host_malloc="system")
    log, _ = proc.communicate(timeout=1800)
    assert proc.returncode == 0, log[-3000:]
    b, md_b, log_b = _outputs(tmp_path / "from_sft")
    assert b["stages"] == a["stages"] and not (tmp_path / "from_sft" / "sft").exists()
    assert b["held_out_vs_start"]["shared"] == 0 and "train_sft" not in b["profile"]
    # every logged RL number (rewards, losses, grad norms) repeats bit for bit; metrics with "seconds" in their
    # names are wall-clock times (rl/rollout_seconds, rl/update_seconds): present only
    rl_log = lambda log: [r for r in log if r["name"].startswith("rl/")]
    assert [(r["name"], r["step"]) for r in rl_log(log_a)] == [(r["name"], r["step"]) for r in rl_log(log_b)]
    assert "rl/rollout_seconds" in {r["name"] for r in log_a}
    log_a, log_b = ([r for r in rl_log(log) if "seconds" not in r["name"]] for log in (log_a, log_b))
    assert len(log_a) == len(log_b) and {"rl/reward_mean", "rl/rollout_steps"} <= {r["name"] for r in log_a}
    for x, y in zip(log_a, log_b):
        same = x == y or (x["name"] == y["name"] and x["step"] == y["step"] and math.isnan(x["value"])
                          and math.isnan(y["value"]))
        assert same, (x, y)
    assert list(a["stages"]) == ["untrained", "sft", "semi_online_rl"]
    # the table (everything above the runtime footer) is identical too
    assert md_a.split("\nruntime")[0] == md_b.split("\nruntime")[0]
    assert "[" in md_a and "vs sft" in md_a  # Wilson intervals and the paired column are printed
    assert set(a["profile"]) >= {"episodes", "train_sft", "train_semi_online_rl", "eval_sft", "this_run"}
    assert len(a["stages"]["sft"]["online_success"]) == 4
    policies = (a["profile"]["this_run"]["host_malloc"], b["profile"]["this_run"]["host_malloc"])
    assert policies == (("keep" if glibc_version() else "system"), "system")


def _outputs(workdir):
    """(results.json, results.md, metrics.jsonl records) of a finished run."""
    return (json.loads((workdir / "results.json").read_text()), (workdir / "results.md").read_text(),
            [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()])
