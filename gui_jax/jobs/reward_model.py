"""Job: train the unified step/outcome reward model on PhoneSim and evaluate it on held-out tasks.

    python -m gui_jax.main --config configs/reward_model.py [--workdir runs/reward_model]
Data (UI-Genie §3.2, gui_jax/rewards/data_engine.py) from the expert episodes of each side of the split,
each record named by its source: expert steps and outcomes (positives); rule-verified perturbed candidates
at every step ("rule": clicks on other elements, a wrong action type, a wrong text, a premature terminate;
"sibling": clicks on other labelled rows, `rm.data.sibling_clicks`); early truncation, same-app cross-task
substitution and redundant continuation (negatives). Optional (`rm.data`): "hard_negative" records, the
false positives of an earlier RM (`hard_negative_checkpoint`) among further rule-labelled clicks, and
"potential" step labels of failed PhoneSim trajectories from continuation rollouts (`potential_labels`,
gui_jax/rewards/potential.py). Writes records_{train,test}.jsonl, the RM's Orbax checkpoints under rm/,
results.json and results.md (F1 by kind, length bucket, difficulty and record source), and a Hugging Face
directory when `rm.export_dir` is set.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

import numpy as np
from absl import logging

from gui_jax.config_check import RunError
from gui_jax.core.types import Action, Episode
from gui_jax.envs.sim.describe import describe_steps, described
from gui_jax.eval.rm_metrics import collapse_warnings, evaluate_records, format_reward_table
from gui_jax.jobs import common
from gui_jax.rewards import data_engine as de
from gui_jax.rewards.likelihood import make_scorer
from gui_jax.rewards.rm_scoring import RewardModelConfig
from gui_jax.rl.prompting import PromptConfig, visible_elements
from gui_jax.train.config_blocks import RM_DATA

# scores records (P(+) each) given the episodes they point at: the earlier reward model of hard-negative mining
RecordScorer = Callable[[Sequence[de.RewardRecord], Mapping[str, Episode]], Sequence[float]]


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


def candidate_actions(ep: Episode, t: int, rng, num_clicks: int = 2,
                      sibling_clicks: int = 0) -> list[tuple[str, Action]]:
    """(source, action) candidates around the expert's step t (the rule matcher labels them). `sibling_clicks`: at
    an expert click, that many clicks on other labelled elements of the screen (list rows: "Ocean Dreams"
    where the goal names "Quiet Echoes"), source "sibling": the negatives that only a goal-to-label match tells
    apart; the clickable-only draw rarely lands on a row, whose own line carries no click flag."""
    a, obs = ep.actions[t], ep.observations[t]
    out: list[tuple[str, Action]] = []
    els = [e for e in visible_elements(obs) if e.clickable]
    if els:
        out += [("rule", _click_on(els[int(k)])) for k in rng.permutation(len(els))[:num_clicks]]
    if sibling_clicks > 0 and a.type in ("click", "long_press"):
        taken = {x.element for _, x in out}
        rows = [e for e in visible_elements(obs) if (e.text or e.content_desc) and e.index not in taken]
        out += [("sibling", _click_on(rows[int(k)])) for k in rng.permutation(len(rows))[:sibling_clicks]]
    if a.type != "system_button":
        out.append(("rule", Action("system_button", button="Back")))
    if a.text:
        out.append(("rule", a.replace(text=_wrong_text(a.text, rng), action_desc=None)))
    if a.type != "terminate":
        out.append(("rule", Action("terminate", status="success")))
    return out


def _field(dcfg, name: str):
    """rm.data.<name>, or its declared default for a config from before the field existed."""
    return dcfg.get(name, RM_DATA[name].default)


def _base_records(episodes: Sequence[Episode], rng, dcfg) -> list[de.RewardRecord]:
    recs: list[de.RewardRecord] = []
    by_app: dict = {}
    for ep in episodes:
        by_app.setdefault(ep.app, []).append(ep)
    for ep in episodes:
        n = len(ep.actions)
        recs += de.expert_records(ep)
        for t in range(n):
            for source, a in candidate_actions(ep, t, rng, dcfg.clicks_per_step, _field(dcfg, "sibling_clicks")):
                recs += de.rule_verified_records(ep, t, [a], source=source)
        w = de.working_steps(ep)
        if w > 1:
            recs += de.truncation_records(ep, [int(rng.integers(1, w))])
        others = [o for o in by_app.get(ep.app, []) if o.goal != ep.goal and de.working_steps(o) > 1]
        n_sub = int(_field(dcfg, "substitutions")) if dcfg.substitution else 0
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
            extra = _click_on(els[int(rng.integers(len(els)))]) if els else Action("system_button", button="Back")
            # described like the expert steps before it, so a raw action line does not give the negative away
            recs += de.continuation_records(ep, [de.StepRef(str(ep.episode_id), n - 1, described(extra, obs))])
    return recs


def mining_clicks(ep: Episode, t: int, rng, n: int, taken: set) -> list[Action]:
    """Up to `n` clicks on visible clickable or labelled elements of step t's screen, none on an element in
    `taken` (the step's rule candidates), in random order."""
    els = [e for e in visible_elements(ep.observations[t])
           if (e.clickable or e.text or e.content_desc) and e.index not in taken]
    return [_click_on(els[int(k)]) for k in rng.permutation(len(els))[:n]]


def mined_hard_negatives(episodes: Sequence[Episode], records: Sequence[de.RewardRecord], rng, clicks: int,
                         earlier_rm: RecordScorer) -> list[de.RewardRecord]:
    """UI-Genie's hard negatives: `clicks` further element clicks per expert step (none on an element the
    step's rule or sibling candidates click), labelled by the rule matcher; the earlier reward model scores the
    wrong ones, and those it scores ≥ 0.5 (judged correct: its false positives) become "hard_negative" records."""
    taken: dict = {}
    for r in records:
        last = r.steps[-1] if r.kind == "step" and r.source in ("rule", "sibling") else None
        if last is not None and last.action is not None and last.action.element is not None:
            taken.setdefault((last.episode_id, last.step), set()).add(last.action.element)
    pool = []
    for ep in episodes:
        for t in range(len(ep.actions)):
            cands = mining_clicks(ep, t, rng, clicks, taken.get((str(ep.episode_id), t), set()))
            pool += [r for r in de.rule_verified_records(ep, t, cands) if not r.label]
    if not pool:
        return []
    return de.hard_negative_records(pool, earlier_rm(pool, {str(e.episode_id): e for e in episodes}))


def potential_data(episodes: Sequence[Episode], rng, k: int, source) -> tuple[list[Episode], list[de.RewardRecord]]:
    """(failed trajectories, their "potential" step records): per expert episode, `source`'s failed trajectory
    (if any) with each step labelled by k continuations (positive iff one succeeds, data_engine.potential_labels)."""
    failed_eps, recs = [], []
    for ep in episodes:
        seed = int(rng.integers(2 ** 31))
        try:
            failed = source.failed_trajectory(ep, seed)
        except ValueError as e:
            raise ValueError(f"rm.data.potential_labels: {e}") from None
        if failed is None:
            continue
        labels = de.potential_labels(len(failed.actions), source.continuation(ep, failed, seed), k)
        failed_eps.append(failed)
        recs += de.potential_records(failed, labels)
    return failed_eps, recs


@dataclass
class RewardData:
    records: list                 # RewardRecords
    episodes: dict                # episode id -> Episode: the expert episodes and the generated failed trajectories


def build_reward_data(episodes: Sequence[Episode], rng, dcfg, *, earlier_rm: Optional[RecordScorer] = None,
                      potential=None) -> RewardData:
    """The data engine's records for PhoneSim expert episodes (see the module docstring). `earlier_rm` scores
    records (rm.data.hard_negative_checkpoint's model); `potential` gives failed trajectories and continuation
    outcomes (rewards/potential.py PhoneSimPotential). The optional parts draw from their own streams after the
    rest, so turning them on leaves the other records as they were."""
    episodes = [describe_steps(e) for e in episodes]      # episodes cached before descriptions existed
    recs = _base_records(episodes, rng, dcfg)
    lookup = {str(e.episode_id): e for e in episodes}
    if _field(dcfg, "hard_negative_checkpoint"):
        if earlier_rm is None:
            raise ValueError("rm.data.hard_negative_checkpoint is set but no earlier reward model was loaded")
        recs += mined_hard_negatives(episodes, recs, np.random.default_rng(rng.integers(2 ** 63)),
                                     int(_field(dcfg, "hard_negative_clicks")), earlier_rm)
    if _field(dcfg, "potential_labels"):
        if potential is None:
            raise ValueError("rm.data.potential_labels is on but no rollout source was given")
        failed, more = potential_data(episodes, np.random.default_rng(rng.integers(2 ** 63)),
                                      int(_field(dcfg, "potential_continuations")), potential)
        lookup.update({str(e.episode_id): e for e in failed})
        recs += more
    de.check_label_conflicts(recs, lookup)
    return RewardData(recs, lookup)


def data_sources(config, pcfg: PromptConfig, rcfg: RewardModelConfig) -> dict:
    """build_reward_data's optional sources for `config`: the earlier RM as a record scorer (loaded from
    rm.data.hard_negative_checkpoint) and PhoneSim rollouts at the episodes' resolution (rm.data.potential_labels)."""
    d, out = config.rm.data, {}
    path = _field(d, "hard_negative_checkpoint")
    if path:
        from gui_jax.jobs.verifier_eval import load_policy
        earlier, source = load_policy(config, path, "rm.data.hard_negative_checkpoint")
        print(f"hard negatives: candidates scored by the earlier reward model {source}")
        out["earlier_rm"] = lambda recs, lookup: make_scorer(earlier, lookup, pcfg, rcfg).score(recs)
    if _field(d, "potential_labels"):
        from gui_jax.rewards.potential import PhoneSimPotential
        out["potential"] = PhoneSimPotential(float(_field(d, "potential_slip")),
                                             int(_field(d, "potential_continuations")), render=True,
                                             resolution=tuple(config.data.resolution))
    return out


def rm_configs(config) -> tuple[PromptConfig, RewardModelConfig]:
    return PromptConfig(**config.prompt.to_dict()), RewardModelConfig(**config.rm.model.to_dict())


def evaluate_rm(agent, records, episodes, pcfg, rcfg, workdir: str, extra: dict | None = None,
                scores: np.ndarray | None = None) -> dict:
    """Scores held-out records with `rcfg.scorer` (verdict: the RM's P(yes); policy_likelihood: P(candidate | the
    agent's prompt)) unless `scores` [N] are given, writes results.json / results.md / test_scores.npy; returns
    the metrics."""
    lookup = {str(e.episode_id): e for e in episodes}
    t0 = time.time()
    scorer = rcfg.scorer
    if scores is None:
        scores = make_scorer(agent, lookup, pcfg, rcfg).score(records)
    metrics = evaluate_records(scores, records, lookup)
    np.save(os.path.join(workdir, "test_scores.npy"), scores)
    out = {"metrics": metrics, "balance": de.label_balance(records), "num_records": len(records),
           "scorer": scorer, "score_seconds": time.time() - t0, **(extra or {})}
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump(out, f, indent=1, default=float)
    for w in collapse_warnings(metrics):
        logging.warning(w)
    table = format_reward_table(metrics)
    with open(os.path.join(workdir, "results.md"), "w") as f:
        what = "Reward model" if scorer == "verdict" else "A policy's likelihood as reward model"
        f.write(f"# {what} on held-out PhoneSim tasks ({len(records)} records)\n\n{table}\n")
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
    pcfg, rcfg = rm_configs(config)
    sources = data_sources(config, pcfg, rcfg)
    seed = config.rm.data.seed
    train = build_reward_data(train_eps, np.random.default_rng(seed), config.rm.data, **sources)
    test = build_reward_data(test_eps, np.random.default_rng(seed + 1), config.rm.data, **sources)
    sources.clear()   # the earlier reward model's weights go before the one to train is built
    de.write_records(os.path.join(workdir, "records_train.jsonl"), train.records)
    de.write_records(os.path.join(workdir, "records_test.jsonl"), test.records)
    print(f"reward data: {len(train.records)} train records, {len(test.records)} held-out records")
    print("train balance:", json.dumps(de.label_balance(train.records)))
    agent = Agent(config, seed=config.seed)
    logger = MetricsLogger(workdir)
    t0 = time.time()
    try:
        info = train_reward_model(agent, train.records, train.episodes, pcfg, rcfg,
                                  config.rm.train, workdir=os.path.join(workdir, "rm"), logger=logger)
    finally:
        logger.close()
    info["train_seconds"] = time.time() - t0
    evaluate_rm(agent, test.records, list(test.episodes.values()), pcfg, rcfg, workdir, extra={"train": info})
    if config.rm.get("export_dir"):
        from gui_jax.jobs.export import export_agent
        from gui_jax.models.export_record import prompt_format
        export_agent(agent, config.rm.export_dir, source={"job": "reward_model", "workdir": os.path.abspath(workdir)},
                     prompt=prompt_format(config.prompt))
        print(f"reward model written to {os.path.abspath(config.rm.export_dir)}")
