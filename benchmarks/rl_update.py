"""One semi-online RL update in the quickstart's shape: every copy trained (rl.merge_duplicates off), copies of
one sign merged (the default), and copies merged across signs with cancelled steps dropped (rl.drop_cancelled).

    python -m benchmarks.rl_update [--json out.json] [--groups 6] [--rollouts 4] [--repeats 5]

The model, packing and micro-batches are the quickstart's (builtin:tiny-base, configs/quickstart.py) on its
PhoneSim train episodes. Each group is one task's N rollouts along the expert's steps (the history is the
expert's, as in the Patch Module's rollouts); at the task's look-up step (its last) half of the rollouts answer
another element and get reward 0, every other step is the expert's action in all rollouts: the shape of the
groups dynamic sampling keeps. Advantages are UI-S1's (rl/advantages.py, the quickstart's γ, ω). Median of
--repeats updates after one warm-up (compilation excluded); the load average before and after and the CPU's
float32 FMA peak are written beside the ratios. Run it alone: a ratio taken while other jobs load the machine is
not a result.
"""
from __future__ import annotations

import argparse
import os
import platform
import tempfile

import numpy as np

from benchmarks.pretrain import cpu_fma_peak
from benchmarks.timing import report, time_calls


def group_samples(agent, episodes, pcfg, cfg, rollouts: int):
    """TrainSamples of `rollouts` rollouts per episode with UI-S1 advantages (see the module doc)."""
    from gui_jax.rl.advantages import ui_s1_semi_online
    from gui_jax.rl.batch import build_batch, model_forward_logprobs
    from gui_jax.rl.prompting import build_messages, expert_response
    from gui_jax.rl.semi_online_rollout import expert_element
    from gui_jax.train.rl_common import samples_from_generations
    from gui_jax.train.sft import expert_history
    gens, rewards, traj, step_idx, group = [], [], [], [], []
    for e, ep in enumerate(episodes):
        last = len(ep.actions) - 1
        for t in range(len(ep.actions)):
            prompt = build_messages(ep.goal, expert_history(ep, t, pcfg), ep.observations[t], pcfg)
            right_el = expert_element(ep, t)
            right = expert_response(ep.actions[t], ep.observations[t], pcfg, element=right_el)
            # a wrong answer of the same form: the element after the expert's, or another step's action
            wrong = expert_response(ep.actions[t], ep.observations[t], pcfg,
                                    element=None if right_el is None else right_el + 1)
            if wrong == right:
                wrong = expert_response(ep.actions[0], ep.observations[t], pcfg, element=expert_element(ep, 0))
            for i in range(rollouts):
                miss = t == last and i >= rollouts // 2
                gens.append(agent.policy.encode(prompt, wrong if miss else right))
                rewards.append(0.0 if miss else 1.0)
                traj.append(e * rollouts + i)
                step_idx.append(t)
                group.append(e)
    adv = ui_s1_semi_online(np.array(rewards, np.float32), np.array(traj, np.int32), np.array(step_idx, np.int32),
                            np.array(group, np.int32), np.array(rewards) == 0.0, gamma=cfg.gamma, omega=cfg.omega,
                            cut_at_mismatch=cfg.cut_at_mismatch, episode_level=cfg.episode_level)
    samples = samples_from_generations(gens, np.asarray(adv["advantages"]).tolist())
    for s in samples:  # π_old = the model itself, as on-policy rollouts: every ratio 1
        batch = build_batch([s], agent.model_config, pad_id=agent.tokenizer.pad_id)
        logp, _ = model_forward_logprobs(agent.model(), batch)
        s.old_logprobs = np.asarray(logp)[batch["loss_mask"] > 0].astype(np.float32)
    return samples


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default="")
    ap.add_argument("--groups", type=int, default=6, help="task groups per update (the quickstart keeps ~4-7)")
    ap.add_argument("--rollouts", type=int, default=4, help="rollouts per task (rl.num_rollouts)")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)

    from gui_jax.jobs import load_config
    from gui_jax.jobs.common import prepare
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig
    from gui_jax.train.rl_common import RLRun
    config = load_config("configs/quickstart.py")
    config.data.num_train_episodes = a.groups
    tmp = tempfile.mkdtemp(prefix="rl_update_bench_")
    episodes = prepare(config, os.path.join(tmp, "episodes"), sides=("train",))[2][:a.groups]
    agent = Agent(config, seed=0)
    pcfg = PromptConfig(**config.prompt.to_dict())
    samples = group_samples(agent, episodes, pcfg, config.rl, a.rollouts)
    load_before = os.getloadavg()
    modes, timings = {"every_copy": (False, False), "merged_same_sign": (True, False),
                      "drop_cancelled": (True, True)}, {}
    metrics = {}
    for name, (merge, drop) in modes.items():
        cfg = config.rl.copy_and_resolve_references()
        cfg.merge_duplicates, cfg.drop_cancelled, cfg.learning_rate = merge, drop, 1e-12
        run = RLRun(agent, len(episodes), cfg, workdir=os.path.join(tmp, name), prefix=name)
        timings[name] = time_calls(lambda: run.update(samples), a.repeats, warmup=1)
        metrics[name] = run.update(samples)
    load_after = os.getloadavg()
    out = {
        "benchmark": "rl_update", "machine": platform.processor() or platform.machine(),
        "shape": {"groups": a.groups, "rollouts": a.rollouts, "samples": len(samples),
                  "prompt_tokens_mean": float(np.mean([s.prompt_ids.size for s in samples])),
                  "row_length": config.rl.row_length, "micro_batch_size": config.rl.micro_batch_size},
        "modes": {name: {**t.as_dict(), "trained_tokens": metrics[name].get("tokens"),
                         "cancelled_steps": metrics[name].get("cancelled_steps", 0),
                         "pg_loss": metrics[name].get("pg_loss")} for name, t in timings.items()},
        "speedup_drop_cancelled_over_merged": timings["merged_same_sign"].median_s / timings["drop_cancelled"].median_s,
        "speedup_merged_over_every_copy": timings["every_copy"].median_s / timings["merged_same_sign"].median_s,
        "load_avg_before": load_before, "load_avg_after": load_after, "cpu": cpu_fma_peak(),
    }
    return report(out, a.json)


if __name__ == "__main__":
    main()
