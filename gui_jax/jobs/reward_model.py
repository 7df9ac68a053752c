"""Job: train the unified step/outcome reward model on PhoneSim and evaluate it on held-out tasks.

    python -m gui_jax.main --config configs/reward_model.py [--workdir runs/reward_model]
Data (UI-Genie §3.2, gui_jax/rewards/data_engine.py) from the expert episodes of each side of the split:
expert steps and outcomes (positives); rule-verified perturbed candidates at every step (clicks on other
elements, a wrong action type, a wrong text, a premature terminate); early truncation, same-app cross-task
substitution and redundant continuation (negatives). Writes records_{train,test}.jsonl, the RM's Orbax
checkpoints under rm/, results.json and results.md (F1 by kind, length bucket and difficulty), and a Hugging
Face directory when `rm.export_dir` is set.
"""
from __future__ import annotations

import json
import os
import time
from typing import Sequence

import numpy as np
from absl import logging

from gui_jax.config_check import RunError
from gui_jax.core.types import Action, Episode
from gui_jax.eval.rm_metrics import collapse_warnings, evaluate_records, format_reward_table
from gui_jax.jobs import common
from gui_jax.rewards import data_engine as de
from gui_jax.rewards.rm_scoring import RewardModelConfig, RewardScorer
from gui_jax.rl.prompting import PromptConfig, visible_elements


def _wrong_text(text: str, rng) -> str:
    digits = [i for i, c in enumerate(text) if c.isdigit()]
    if digits:
        i = int(rng.choice(digits))
        return text[:i] + str((int(text[i]) + 1 + int(rng.integers(8))) % 10) + text[i + 1:]
    words = text.split()
    return " ".join(words[:-1] + ["Nothing"]) if len(words) > 1 else "Nothing"


def _click_on(e) -> Action:
    x1, y1, x2, y2 = e.bounds
    return Action("click", x=(x1 + x2) / 2, y=(y1 + y2) / 2, element=e.index)


def perturbed_actions(ep: Episode, t: int, rng, num_clicks: int = 2, sibling_clicks: int = 0) -> list[Action]:
    """Candidate actions around the expert's step t (the rule matcher labels them). `sibling_clicks`: at
    an expert click, that many clicks on other labelled elements of the screen (list rows: "Ocean Dreams"
    where the goal names "Quiet Echoes"), the hard negatives that only a goal-to-label match tells apart;
    the clickable-only draw rarely lands on a row, whose own line carries no click flag."""
    a, obs = ep.actions[t], ep.observations[t]
    out: list[Action] = []
    els = [e for e in visible_elements(obs) if e.clickable]
    if els:
        out += [_click_on(els[int(k)]) for k in rng.permutation(len(els))[:num_clicks]]
    if sibling_clicks > 0 and a.type in ("click", "long_press"):
        taken = {x.element for x in out}
        rows = [e for e in visible_elements(obs) if (e.text or e.content_desc) and e.index not in taken]
        out += [_click_on(rows[int(k)]) for k in rng.permutation(len(rows))[:sibling_clicks]]
    if a.type != "system_button":
        out.append(Action("system_button", button="Back"))
    if a.text:
        out.append(a.replace(text=_wrong_text(a.text, rng), action_desc=None))
    if a.type != "terminate":
        out.append(Action("terminate", status="success"))
    return out


def build_records(episodes: Sequence[Episode], rng, dcfg) -> list[de.RewardRecord]:
    """The data engine's records for PhoneSim expert episodes (see the module docstring)."""
    recs: list[de.RewardRecord] = []
    by_app: dict = {}
    for ep in episodes:
        by_app.setdefault(ep.app, []).append(ep)
    for ep in episodes:
        n = len(ep.actions)
        recs += de.expert_records(ep)
        for t in range(n):
            recs += de.rule_verified_records(ep, t, perturbed_actions(ep, t, rng, dcfg.clicks_per_step,
                                                                      dcfg.get("sibling_clicks", 0)))
        w = de.working_steps(ep)
        if w > 1:
            recs += de.truncation_records(ep, [int(rng.integers(1, w))])
        others = [o for o in by_app.get(ep.app, []) if o.goal != ep.goal and de.working_steps(o) > 1]
        n_sub = int(dcfg.get("substitutions", 1)) if dcfg.substitution else 0
        # one substitution draws as it always did, so the default records stay the same
        picks = ([] if not others or n_sub == 0 else [rng.integers(len(others))] if n_sub == 1
                 else rng.permutation(len(others))[:n_sub])
        for k in picks:
            o = others[int(k)]
            recs += de.substitution_records(ep, o, int(rng.integers(1, w)) if w > 1 else 0,
                                            int(rng.integers(1, de.working_steps(o))))
        if dcfg.continuation and ep.actions[-1].type == "terminate":
            obs = ep.observations[n - 1]
            els = [e for e in visible_elements(obs) if e.clickable]
            if els:
                extra = _click_on(els[int(rng.integers(len(els)))])
            else:
                extra = Action("system_button", button="Back")
            recs += de.continuation_records(ep, [de.StepRef(str(ep.episode_id), n - 1, extra)])
    de.check_label_conflicts(recs, {str(e.episode_id): e for e in episodes})
    return recs


def rm_configs(config) -> tuple[PromptConfig, RewardModelConfig]:
    return PromptConfig(**config.prompt.to_dict()), RewardModelConfig(**config.rm.model.to_dict())


def evaluate_rm(agent, records, episodes, pcfg, rcfg, workdir: str, extra: dict | None = None) -> dict:
    """Scores held-out records, writes results.json / results.md / test_scores.npy; returns the metrics."""
    lookup = {str(e.episode_id): e for e in episodes}
    t0 = time.time()
    scores = RewardScorer(agent, lookup, pcfg, rcfg).score(records)
    metrics = evaluate_records(scores, records, lookup)
    np.save(os.path.join(workdir, "test_scores.npy"), scores)
    out = {"metrics": metrics, "balance": de.label_balance(records), "num_records": len(records),
           "score_seconds": time.time() - t0, **(extra or {})}
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump(out, f, indent=1, default=float)
    for w in collapse_warnings(metrics):
        logging.warning(w)
    table = format_reward_table(metrics)
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(f"# Reward model on held-out PhoneSim tasks ({len(records)} records)\n\n{table}\n")
    print(table)
    return metrics


def run(config, workdir: str) -> None:
    from gui_jax.rl.agent import Agent
    from gui_jax.train.logger import MetricsLogger
    from gui_jax.train.rm_training import check_rm_train_block, train_reward_model
    try:  # before minutes of episode and record building
        check_rm_train_block(config.rm.train)
    except ValueError as e:
        raise RunError(str(e)) from None
    _, _, train_eps, test_eps = common.prepare(config, workdir, sides=("train", "test"))
    rng = np.random.default_rng(config.rm.data.seed)
    train_recs = build_records(train_eps, rng, config.rm.data)
    test_recs = build_records(test_eps, np.random.default_rng(config.rm.data.seed + 1), config.rm.data)
    de.write_records(os.path.join(workdir, "records_train.jsonl"), train_recs)
    de.write_records(os.path.join(workdir, "records_test.jsonl"), test_recs)
    print(f"reward data: {len(train_recs)} train records, {len(test_recs)} held-out records")
    print("train balance:", json.dumps(de.label_balance(train_recs)))
    agent = Agent(config, seed=config.seed)
    pcfg, rcfg = rm_configs(config)
    logger = MetricsLogger(workdir)
    t0 = time.time()
    try:
        info = train_reward_model(agent, train_recs, {str(e.episode_id): e for e in train_eps}, pcfg, rcfg,
                                  config.rm.train, workdir=os.path.join(workdir, "rm"), logger=logger)
    finally:
        logger.close()
    info["train_seconds"] = time.time() - t0
    evaluate_rm(agent, test_recs, test_eps, pcfg, rcfg, workdir, extra={"train": info})
    if config.rm.get("export_dir"):
        from gui_jax.jobs.export import export_agent
        export_agent(agent, config.rm.export_dir, source={"job": "reward_model", "workdir": os.path.abspath(workdir)})
        print(f"reward model written to {os.path.abspath(config.rm.export_dir)}")
