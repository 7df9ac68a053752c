"""Job: evaluate a trained reward model on held-out PhoneSim tasks (step / outcome P, R, F1 by length and
difficulty, docs/algorithms.md §11).

    python -m gui_jax.main --config configs/reward_eval.py --config.rm_eval.checkpoint_dir=runs/reward_model/rm/checkpoints
Weights: the latest Orbax checkpoint in `rm_eval.checkpoint_dir`, else `model.checkpoint` (a Hugging Face
directory written by the reward_model job's `rm.export_dir` or the export job). The held-out records are
built like the training job's (same data settings and seed, hard negatives and potential labels included when
`rm.data` turns them on), so results are comparable. `rm.model.scorer=policy_likelihood` scores a policy checkpoint
(e.g. the quickstart's SFT) as the implicit RM: P(candidate | the agent's prompt), no training.
With the prefix minimum on, `rm_eval.history_gates=(1.0, 0.1, 0.01)` adds a table of the headline metrics at
each gate from one scoring pass (history_gates.md, results.json `history_gates`): choose the gate on validation
episodes (another data.test_seed_range), then report it on the test episodes.
"""
from __future__ import annotations

import os

import numpy as np

from gui_jax.config_check import RunError
from gui_jax.eval.rm_metrics import evaluate_records
from gui_jax.jobs import common
from gui_jax.jobs.reward_model import build_reward_data, data_sources, evaluate_rm, rm_configs
from gui_jax.rewards import data_engine as de


def history_gate_rows(own, history, records, episodes, gates) -> list[dict]:
    """Per gate: step / outcome P, R, F1 (all and the 5-10-step bucket) and the fraction of wrong-row substitutions
    scored positive, from one pass's log_components (own [N], history: N arrays of earlier steps' log P)."""
    from gui_jax.rewards.likelihood import gated_history_min
    rows = []
    for gate in gates:
        m = evaluate_records(np.exp(gated_history_min(own, history, float(gate))), records, episodes)
        row = {"gate": float(gate)}
        for kind, v in m.items():
            row[kind] = {k: v["all"][k] for k in ("precision", "recall", "f1")}
            row[kind]["f1_5_10"] = v["5-10"]["f1"] if "5-10" in v else float("nan")
            row[kind]["substitutions_passed"] = v["by_source"].get("substitution/neg", {}).get("scored_positive",
                                                                                               float("nan"))
        rows.append(row)
    return rows


def format_gate_table(rows: list[dict]) -> str:
    head = ("| history_gate | step P / R / F1 | step F1, 5-10 steps | outcome P / R / F1 | outcome F1, 5-10 steps | "
            "substitutions scored positive (step / outcome) |")
    lines = [head, "|" + "---|" * 6]
    for r in rows:
        s, o = r.get("step", {}), r.get("outcome", {})
        prf = lambda d: " / ".join(f"{d.get(k, float('nan')):.3f}" for k in ("precision", "recall", "f1"))
        lines.append(f"| {r['gate']:g} | {prf(s)} | {s.get('f1_5_10', float('nan')):.3f} | {prf(o)} | "
                     f"{o.get('f1_5_10', float('nan')):.3f} | {s.get('substitutions_passed', float('nan')):.3f} / "
                     f"{o.get('substitutions_passed', float('nan')):.3f} |")
    return "\n".join(lines)


def run(config, workdir: str) -> None:
    from gui_jax.rl.agent import Agent
    ckpt_dir = config.rm_eval.get("checkpoint_dir", "")
    if not ckpt_dir and not config.model.get("checkpoint", ""):
        raise RunError("reward_eval needs trained weights: set rm_eval.checkpoint_dir (e.g. "
                       "runs/reward_model/rm/checkpoints, or a policy's runs/quickstart/sft/checkpoints with "
                       "rm.model.scorer=policy_likelihood) or model.checkpoint (a Hugging Face directory)")
    _, _, _, test_eps = common.prepare(config, workdir, sides=("test",))
    pcfg, rcfg = rm_configs(config)
    sources = data_sources(config, pcfg, rcfg)
    data = build_reward_data(test_eps, np.random.default_rng(config.rm.data.seed + 1), config.rm.data, **sources)
    sources.clear()
    de.write_records(os.path.join(workdir, "records_test.jsonl"), data.records)
    agent = Agent(config, seed=config.seed)
    source = {"kind": "huggingface", "path": os.path.abspath(config.model.get("checkpoint", ""))}
    if ckpt_dir:
        params, step = common.load_stage_params(ckpt_dir, field="rm_eval.checkpoint_dir")
        common.set_agent_params(agent, params, ckpt_dir)
        source = {"kind": "orbax", "path": os.path.abspath(ckpt_dir), "step": int(step)}
    what = "reward model" if rcfg.scorer == "verdict" else "a policy as the reward model (its own likelihood)"
    print(f"evaluating {what} from {source}")
    gates = tuple(config.rm_eval.get("history_gates", ()))
    if not gates:
        evaluate_rm(agent, data.records, list(data.episodes.values()), pcfg, rcfg, workdir, extra={"weights": source})
        return
    if not (rcfg.scorer == "policy_likelihood" and rcfg.history_min):
        raise RunError("rm_eval.history_gates sweeps the gate of the prefix minimum: it needs "
                       "rm.model.scorer=policy_likelihood and rm.model.history_min=True")
    from gui_jax.rewards.likelihood import LikelihoodScorer, gated_history_min
    episodes = {str(e.episode_id): e for e in data.episodes.values()}
    own, history = LikelihoodScorer(agent, episodes, pcfg, batch_size=rcfg.batch_size).log_components(data.records)
    rows = history_gate_rows(own, history, data.records, episodes, gates)
    evaluate_rm(agent, data.records, list(episodes.values()), pcfg, rcfg, workdir,
                scores=np.exp(gated_history_min(own, history, rcfg.history_gate)),
                extra={"weights": source, "history_gates": rows})
    table = format_gate_table(rows)
    with open(os.path.join(workdir, "history_gates.md"), "w") as f:
        f.write(f"# The prefix minimum's gate ({len(data.records)} records, threshold 0.5)\n\n{table}\n")
    print(table)
