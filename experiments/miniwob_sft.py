"""The tiny agent on MiniWob++: held-out success before and after SFT on scripted-expert demonstrations.

    python experiments/miniwob_sft.py [--workdir runs/miniwob_sft] [--train_seeds 20] [--test_seeds 10]
        [--sft_steps 300] [--num_envs 2]

Train tasks = the pages with a scripted expert (gui_jax/envs/miniwob_experts.py), seeds 0..N-1; held-out
tasks = the same pages at seeds 1000.. (unseen instructions and layouts). The agent reads the page's
elements as UI text and acts by element index (configs/miniwob_eval.py). Reports per-page and overall
SR with 95 % Wilson intervals and the exact McNemar p-value of the paired before/after outcomes, to
<workdir>/results.json and results.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", default="runs/miniwob_sft")
    ap.add_argument("--train_seeds", type=int, default=20)
    ap.add_argument("--test_seeds", type=int, default=10)
    ap.add_argument("--sft_steps", type=int, default=300)
    ap.add_argument("--num_envs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    from gui_jax.core.serialize import load_episodes, save_episodes
    from gui_jax.envs.miniwob import MiniWobEnv, miniwob_tasks
    from gui_jax.envs.miniwob_experts import EXPERT_TASKS, expert_episode
    from gui_jax.eval.metrics import mcnemar_exact, wilson_interval
    from gui_jax.jobs import load_config
    from gui_jax.jobs.env_eval import env_factory, evaluate_on_envs
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig
    from gui_jax.train.config_blocks import sft_block
    from gui_jax.train.sft import train_sft
    from tqdm.auto import tqdm

    os.makedirs(a.workdir, exist_ok=True)
    t0 = time.time()
    cfg = load_config(os.path.join(HERE, "..", "configs", "miniwob_eval.py"))
    cfg.seed = a.seed
    cfg.env.tasks, cfg.env.num_envs, cfg.env.max_steps = EXPERT_TASKS, a.num_envs, 6
    ep_dir = os.path.join(a.workdir, "episodes")
    if os.path.isdir(ep_dir):
        train_eps = load_episodes(ep_dir)
    else:
        env = MiniWobEnv(max_steps=10, max_cached_pages=len(EXPERT_TASKS))
        train_eps, skipped = [], []
        for t in tqdm(miniwob_tasks(EXPERT_TASKS, range(a.train_seeds)), desc="expert episodes"):
            try:
                train_eps.append(expert_episode(env, t))
            except RuntimeError as e:  # a page the script cannot solve is reported, not trained on
                skipped.append(str(e))
        env.close()
        if skipped:
            print(f"{len(skipped)} expert episodes failed and are not used:\n  " + "\n  ".join(skipped))
        save_episodes(train_eps, ep_dir)
    test_tasks = miniwob_tasks(EXPERT_TASKS, range(1000, 1000 + a.test_seeds))
    agent = Agent(cfg, seed=a.seed)
    pcfg = PromptConfig(**cfg.prompt.to_dict())

    def evaluate(name):
        records, table, report = evaluate_on_envs(agent.policy, env_factory(cfg.env), test_tasks, pcfg,
                                                  num_envs=a.num_envs, max_steps=cfg.env.max_steps, seed=a.seed)
        outcome = {r.task.task_id: bool(r.success) for r in records if r.status == "completed"}
        print(f"[{name}] SR {table['overall']['SR']:.3f} {table['overall']['ci95']}")
        return table, outcome, report

    before, out_before, _ = evaluate("untrained")
    sft = sft_block()
    sft.num_steps, sft.batch_size, sft.micro_batch_size = a.sft_steps, 16, 8
    sft.learning_rate, sft.warmup_steps, sft.checkpoint_every, sft.seed = 2e-3, 20, a.sft_steps, a.seed
    train_sft(agent, train_eps, pcfg, sft, workdir=os.path.join(a.workdir, "sft"))
    after, out_after, report = evaluate("sft")
    ids = sorted(set(out_before) & set(out_after))
    p = mcnemar_exact([out_before[i] for i in ids], [out_after[i] for i in ids])
    results = {"before": before, "after": after, "mcnemar_p": p, "paired_tasks": len(ids),
               "train_episodes": len(train_eps), "sft_steps": a.sft_steps, "rollouts": report,
               "minutes": (time.time() - t0) / 60, "loadavg": list(os.getloadavg()),
               "command": "python experiments/miniwob_sft.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    lines = ["| page | SR before [95 % CI] | SR after SFT [95 % CI] |", "|---|---|---|"]
    for name in after:
        if isinstance(after[name], dict):
            b, c = before[name], after[name]
            lines.append(f"| {name} | {b['SR']:.3f} [{b['ci95'][0]:.3f}, {b['ci95'][1]:.3f}] | "
                         f"{c['SR']:.3f} [{c['ci95'][0]:.3f}, {c['ci95'][1]:.3f}] |")
    lines.append(f"\nexact McNemar p = {p:.2g} over {len(ids)} paired held-out tasks; "
                 f"{len(train_eps)} expert episodes, {a.sft_steps} SFT steps, {results['minutes']:.1f} min")
    with open(os.path.join(a.workdir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(a.workdir, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
