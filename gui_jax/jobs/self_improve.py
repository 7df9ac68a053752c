"""Job: UI-Genie self-improvement rounds (docs/algorithms.md §9): reward-guided beam search synthesises
successful trajectories, the policy is fine-tuned on them, and its held-out online SR is measured per round.

    python -m gui_jax.main --config configs/self_improve.py \
        --config.self_improve.rm_checkpoint_dir=runs/reward_model/rm/checkpoints [--workdir runs/self_improve]

Round r = 0 … R (`self_improve.rounds`):
  1. evaluate the round's policy online on the held-out tasks (greedy; SR with its Wilson 95 % interval,
     paired with round 0 on the same tasks by an exact McNemar test);
  2. (r < R) beam search on `tasks_per_round` fresh train tasks (seeds from `synth_seed_range`, a disjoint
     slice per round, at most `max_optimal_steps[r]` steps): `num_candidates` policy samples per step, the
     RM's step score, the best `beam_width` partial trajectories kept, PhoneSim's success check at the end;
     the best successful trajectory of each task is kept;
  3. (r < R) SFT (train/sft.py, `self_improve.sft`) of the policy on the expert episodes + every trajectory
     synthesised so far → the policy of round r + 1;
  4. (r < R, `rm_retrain`) UI-Genie's co-evolution: the RM is fine-tuned (`self_improve.rm_train`) on the core
     reward records of the expert episodes plus data_engine.synthesis_records of every round's successes and
     failed trajectories so far (round_<r>/rm_records.jsonl, counts in round_<r>/rm_data.json) → the RM of
     round r + 1; each round's RM is scored on the held-out records (round_<r>/rm_eval/), by each record's own
     score and by its prefix minimum, and compared with the round before (rm_rounds.json; self_improve_rm.py).
Episodes (evaluation and search) run on `config.env` (gui_jax/envs/factory.py): PhoneSim by default (the split's
held-out tasks; templates for the search), else env.backend's tasks: env.tasks × env.eval_seeds held out, env.tasks ×
the round's slice of synth_seed_range searched (beam search replays from a reset, so the backend must be replayable).
Round 0's policy: `self_improve.policy_checkpoint_dir`, else the configured model after `sft` on the expert
episodes (init_sft/; `sft.num_steps` = 0 keeps it untrained).
Resumable round by round: a round's evaluation (round_<r>/eval.json), synthesis (round_<r>/synth/), SFT
(round_<r>/sft/checkpoints) and RM fine-tuning (round_<r>/rm/checkpoints) are not redone when present.
results.json / results.md summarise every round.
"""
from __future__ import annotations

import json
import os
import shutil
import time

import ml_collections
import numpy as np

from gui_jax.config_check import ConfigError, checkpoint_steps
from gui_jax.core.labels import label_to_element
from gui_jax.core.types import Episode
from gui_jax.eval.metrics import mcnemar_exact, paired_counts, wilson_interval
from gui_jax.eval.suite import counts_table, template_counts
from gui_jax.jobs import common
from gui_jax.jobs.self_improve_rm import (RM_DATA_KEY, ROUNDS_KEY, add_prefix_min, compare_rounds,
                                         core_rm_data, f1_of, format_rm_rounds, grown_rm_data, read_json,
                                         rm_round_eval)
from gui_jax.jobs.verifier_eval import (_fail, _is_int, check_rm_source, check_search_fields, episode_env_factory,
                                       held_out_tasks, load_policy, load_reward_model, policy_proposer,
                                       rm_step_scorer)
from gui_jax.rewards.search import beam_search

SYNTH_KEY = "synth.json"


# ------------------------------------------------------------------------------------------ config
def check_self_improve_config(config) -> None:
    """ConfigError naming the first bad field (the shared blocks first, then `self_improve`)."""
    from gui_jax.config_check import check_config, template_names
    check_config(config)
    if "self_improve" not in config:
        raise ConfigError("config has no 'self_improve' block; start from configs/self_improve.py")
    si = config.self_improve
    for name, lo in (("rounds", 0), ("tasks_per_round", 1), ("beam_width", 1), ("num_candidates", 1)):
        if not _is_int(si[name]) or si[name] < lo:
            _fail(f"self_improve.{name}", si[name], f"expected an integer ≥ {lo}")
    steps = si.max_optimal_steps
    if isinstance(steps, (str, bytes)) or not isinstance(steps, (tuple, list)) or not steps \
            or not all(_is_int(s) and s >= 1 for s in steps):
        _fail("self_improve.max_optimal_steps", steps, "expected a non-empty tuple of integers ≥ 1 (one per round; "
              "the last repeats)")
    rng = si.synth_seed_range
    if not (isinstance(rng, (tuple, list)) and len(rng) == 2 and all(_is_int(x) for x in rng)
            and rng[1] - rng[0] >= max(si.rounds, 1)):
        _fail("self_improve.synth_seed_range", rng, f"expected (first, end) with at least {max(si.rounds, 1)} "
              "seeds (one disjoint slice per round)")
    a, b = config.data.test_seed_range
    if max(rng[0], a) < min(rng[1], b):
        _fail("self_improve.synth_seed_range", tuple(rng), f"overlaps data.test_seed_range {(a, b)}; "
              "synthesis must use unseen-by-evaluation seeds")
    known = template_names()
    for name in ("templates", "expert_templates"):
        names = si.get(name, ())
        if isinstance(names, (str, bytes)) or not isinstance(names, (tuple, list)):
            _fail(f"self_improve.{name}", names, "expected a tuple of template names (() = data.templates)")
        for t in names:
            if t not in known:
                from gui_jax.config_check import unknown
                _fail(f"self_improve.{name}", tuple(names), unknown(f"template {t!r}", t, known))
    env = config.get("env")
    if env is not None and env.get("backend", "phonesim") not in ("phonesim", "remote") \
            and set(env.get("eval_seeds", ())) & set(range(*rng)):
        _fail("self_improve.synth_seed_range", tuple(rng), f"overlaps env.eval_seeds {tuple(env.eval_seeds)} (the "
              f"held-out {env.backend} tasks); synthesis must use unseen-by-evaluation seeds")
    check_search_fields(config, "self_improve")
    for flag in ("synthesise", "rm_failed_outcomes"):
        if not isinstance(si.get(flag, True), bool):
            _fail(f"self_improve.{flag}", si[flag], "expected True or False")
    if not si.get("synthesise", True):  # the expert-only control: no search, so no reward model at all
        if si.get("rm_retrain", False):
            _fail("self_improve.rm_retrain", True, "the expert-only control (self_improve.synthesise=False) "
                  "searches nothing and retrains no reward model; set it False")
        return
    check_rm_source(config, "self_improve")
    if config.rm.model.get("history_min", False):
        _fail("rm.model.history_min", True, "self_improve's search ranks candidates after one shared history, and "
              "each round's RM is reported both by the record's own score and by its prefix minimum; leave it False")
    if si.get("rm_retrain", False):
        from gui_jax.train.rm_training import check_rm_train_block
        if "rm_train" not in si:
            _fail("self_improve.rm_train", None, "rm_retrain needs an rm_train block (configs/self_improve.py)")
        try:
            check_rm_train_block(si.rm_train)
        except ValueError as e:
            raise ConfigError(f"config.self_improve.rm_train: {e}") from None


# ------------------------------------------------------------------------------------------ tasks and episodes
def expert_config(config):
    """The config whose train side gives the expert episodes: data.templates replaced by
    self_improve.expert_templates where set (the search and the held-out tasks keep data.*)."""
    expert = tuple(config.self_improve.get("expert_templates", ()))
    if not expert or expert == tuple(config.data.templates):
        return config
    out = config.copy_and_resolve_references()
    out.data.templates = expert
    return out


def expert_and_test_episodes(config, workdir: str, with_test: bool) -> tuple[list, list, list]:
    """(held-out tasks, expert episodes, held-out episodes or []) of `common.prepare`, the expert side from
    `expert_config`."""
    sides = ("train", "test") if with_test else ("train",)
    expert = expert_config(config)
    if expert is config:
        _, test_tasks, train_eps, test_eps = common.prepare(config, workdir, sides=sides)
        return test_tasks, train_eps, test_eps
    _, _, train_eps, _ = common.prepare(expert, workdir, sides=("train",))
    _, test_tasks, _, test_eps = common.prepare(config, workdir, sides=sides[1:])
    return test_tasks, train_eps, test_eps


def synth_tasks(config, r: int, held_out=()) -> list:
    """Round r's search tasks: the r-th disjoint seed slice of synth_seed_range, the configured templates
    (() = data.templates, () again = all), at most max_optimal_steps[r] steps, round-robin over templates, none of
    an instance a `held_out` task has (PhoneSim repeats instances across seeds: a searched success on a held-out
    instance would train the policy and the RM on a test task); a backend with its own task list: the first
    tasks_per_round of env.tasks × that slice, again without held-out instances."""
    from gui_jax.envs.factory import backend_tasks
    from gui_jax.tasks.registry import list_templates, make_tasks
    si, d = config.self_improve, config.data
    s0, s1 = si.synth_seed_range
    span = (s1 - s0) // max(si.rounds, 1)
    own = backend_tasks(config.env, range(s0 + r * span, s0 + (r + 1) * span)) if config.get("env") else None
    if own is not None:
        return common.without_held_out(own, held_out, f"[round {r}] search")[:si.tasks_per_round]
    templates = tuple(si.templates) or tuple(d.templates) or tuple(list_templates())
    limit = si.max_optimal_steps[min(r, len(si.max_optimal_steps) - 1)]
    dcfg = ml_collections.ConfigDict({"difficulties": tuple(d.difficulties), "max_optimal_steps": int(limit),
                                      "templates": templates})
    pool = common.without_held_out(make_tasks(templates, range(s0 + r * span, s0 + (r + 1) * span)), held_out,
                                   f"[round {r}] search")
    return common.select_tasks(pool, dcfg, si.tasks_per_round)


def _materialize(obs):
    return obs.materialize() if hasattr(obs, "materialize") else obs


def target_bbox(action, obs):
    """The bounds of a point action's target: its element, else the smallest visible element holding the point
    (what the oracle records, so element-mode SFT can name the element)."""
    from gui_jax.rl.prompting import visible_elements
    if action.type not in ("click", "long_press"):
        return None
    action = label_to_element(action, obs.ui_elements)
    if action.x is None and action.element is None:
        return None
    els = visible_elements(obs)
    if action.element is not None:
        hit = [e for e in els if e.index == action.element]
    else:
        hit = [e for e in els if e.bounds[0] <= action.x <= e.bounds[2] and e.bounds[1] <= action.y <= e.bounds[3]]
    if not hit:
        return None
    e = min(hit, key=lambda e: (e.bounds[2] - e.bounds[0]) * (e.bounds[3] - e.bounds[1]))
    return tuple(float(v) for v in e.bounds)


def partial_episode(task, partial, suffix: str = "@beam") -> Episode:
    """A finished beam-search trajectory as an episode (observations before each action + the last): a
    successful one is SFT data, either kind is reward data (data_engine.synthesis_records)."""
    observations = [_materialize(o) for o, _ in partial.history] + [_materialize(partial.obs)]
    seed = getattr(task, "seed", getattr(task, "task_idx", None))  # PhoneSim's seed; AndroidWorld's task_idx
    return Episode(episode_id=f"{task.task_id}{suffix}", goal=task.goal, observations=observations,
                   actions=list(partial.actions), app=getattr(task, "app", ""), template=task.template,
                   difficulty=getattr(task, "difficulty", None) or "",
                   target_bboxes=[target_bbox(a, o) for a, o in zip(partial.actions, observations)],
                   info={"seed": seed, "source": "reward_guided_beam_search", "score": float(partial.score),
                         "success": bool(partial.success), "coords": "screen"})


def synthesise(tasks, make_env, propose, score_many, si, *, progress: bool = False):
    """(the shortest successful beam-search trajectory of each task, ties to the higher cumulative reward (tasks
    without one give none), every finished unsuccessful trajectory of the search, ids suffixed @fail<i>).
    Shortest, not highest-scoring: a sum of step rewards grows with every extra step, so the top-scoring success
    is often the longest, e.g. an answer task's right answer repeated after wrong ones (PhoneSim keeps the last
    answer, as AndroidWorld does), and SFT on it teaches the detour."""
    from gui_jax.core.progress import progress as progress_bar
    out, failed = [], []
    for i, task in enumerate(progress_bar(tasks, desc="beam search", unit="task", disable=not progress)):
        parts = beam_search(task, make_env, propose, None, beam_width=si.beam_width,
                            num_candidates=si.num_candidates, max_steps=si.max_steps, seed=int(si.seed) + i,
                            score_many=score_many)
        successes = [p for p in parts if p.done and p.success]
        best = min(successes, key=lambda p: (len(p.actions), -p.score)) if successes else None
        if best is not None:
            out.append(partial_episode(task, best))
        for k, p in enumerate(x for x in parts if x.done and not x.success and x.actions):
            failed.append(partial_episode(task, p, suffix=f"@fail{k}"))
    return out, failed


def _episodes_in(folder: str) -> list:
    from gui_jax.data.episode_store import EpisodeStore
    return list(EpisodeStore(folder, use_index=False)) if os.path.isdir(folder) else []


def load_synth(folder: str):
    """(successful episodes, key, failed episodes) of a finished synthesis folder, or None if absent or
    unfinished (a folder from before failures were kept has none)."""
    path = os.path.join(folder, SYNTH_KEY)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        key = json.load(f)
    eps = _episodes_in(os.path.join(folder, "episodes")) if key["successes"] else []
    failed = _episodes_in(os.path.join(folder, "failed")) if key.get("failed_ids") else []
    for name, got, want in (("synthesised", eps, key["episode_ids"]), ("failed", failed, key.get("failed_ids", []))):
        if [e.episode_id for e in got] != want:
            raise common.StaleEpisodesError(f"{folder} holds {len(got)} {name} episodes, its {SYNTH_KEY} lists "
                                            f"{len(want)}; delete the folder to redo the round")
    return eps, key, failed


def save_synth(folder: str, episodes, tasks, failed=()) -> dict:
    from gui_jax.core.serialize import save_episode
    if os.path.isdir(folder):
        shutil.rmtree(folder)  # an interrupted synthesis: start it again
    for sub, eps in (("episodes", episodes), ("failed", failed)):
        os.makedirs(os.path.join(folder, sub))
        for i, ep in enumerate(eps):
            save_episode(ep, os.path.join(folder, sub, f"{i:06d}"))
    key = {"searched": [t.task_id for t in tasks], "successes": len(episodes),
           "episode_ids": [e.episode_id for e in episodes], "failed_ids": [e.episode_id for e in failed]}
    with open(os.path.join(folder, SYNTH_KEY), "w") as f:
        json.dump(key, f, indent=1)
    return key


# ------------------------------------------------------------------------------------------ results
def synth_by_template(synth: dict | None) -> dict:
    """{template: [successes, tasks searched]} of a round's synth.json, for task ids 'template#seed' (PhoneSim's;
    {} for other ids): where the search reached."""
    searched = (synth or {}).get("searched", [])
    if not searched or not all("#" in t for t in searched):
        return {}
    found = {e.split("@")[0] for e in synth.get("episode_ids", [])}  # '<task id>@beam'
    counts = template_counts({"searched": (searched, [t in found for t in searched])})
    return {t: row["searched"] for t, row in counts.items()}


def round_row(ev: dict, base: dict, synth: dict | None, rm_metrics: dict | None = None,
              rm_data: dict | None = None) -> dict:
    s, s0 = ev["success"], base["success"]
    k, n = int(sum(s)), len(s)
    lo, hi = wilson_interval(k, n)
    b, c = paired_counts(s0, s)
    return {"SR": k / n, "successes": k, "episodes": n, "ci95": [lo, hi], "lost_vs_round0": b,
            "gained_vs_round0": c, "mcnemar_p_vs_round0": mcnemar_exact(s0, s),
            "synth_searched": len(synth["searched"]) if synth else 0,
            "synth_successes": synth["successes"] if synth else 0,
            "synth_failures": len(synth.get("failed_ids", [])) if synth else 0,
            "synth_by_template": synth_by_template(synth),
            "rm_step_f1": f1_of(rm_metrics, "step") if rm_metrics else None,
            "rm_outcome_f1": f1_of(rm_metrics, "outcome") if rm_metrics else None,
            "rm_records_after": rm_data["total"] if rm_data else None,
            "rm_records_produced": rm_data["produced"] if rm_data else None, "success": s}


def format_rounds(rows: dict) -> str:
    rm = any(x.get("rm_step_f1") is not None for x in rows.values())
    head = ("| round | online SR [95 % Wilson] | successes | Δ SR vs round 0 (lost/gained, exact McNemar p) | "
            "synthesised successes / tasks searched |")
    lines = [head + (" RM step F1 / outcome F1 (held-out) | RM records after the round (+ produced) |" if rm else ""),
             "|---|---|---|---|---|" + ("---|---|" if rm else "")]
    base = rows["0"]["SR"]
    for r in sorted(rows, key=int):
        x = rows[r]
        cmp = "(reference)" if r == "0" else (f"{x['SR'] - base:+.3f} ({x['lost_vs_round0']}/{x['gained_vs_round0']}, "
                                              f"p={x['mcnemar_p_vs_round0']:.3g})")
        line = (f"| {r} | {x['SR']:.3f} [{x['ci95'][0]:.3f}, {x['ci95'][1]:.3f}] | {x['successes']}/"
                f"{x['episodes']} | {cmp} | {x['synth_successes']} / {x['synth_searched']} |")
        if rm:
            f1 = ("—" if x.get("rm_step_f1") is None else f"{x['rm_step_f1']:.3f} / {x['rm_outcome_f1']:.3f}")
            grown = ("—" if x.get("rm_records_after") is None
                     else f"{x['rm_records_after']} (+{x['rm_records_produced']})")
            line += f" {f1} | {grown} |"
        lines.append(line)
    reach = {r: x["synth_by_template"] for r, x in sorted(rows.items(), key=lambda kv: int(kv[0]))
             if x.get("synth_by_template")}
    if reach:  # which templates the search reached, round by round
        counts = {t: {f"round {r}": v[t] for r, v in reach.items() if t in v}
                  for t in sorted({t for v in reach.values() for t in v})}
        lines += ["", "synthesised successes / tasks searched by template:", "",
                  counts_table(counts, [f"round {r}" for r in reach])]
    return "\n".join(lines)


def write_results(workdir: str, rounds: int, extra: dict, where: str = "PhoneSim") -> dict:
    evals = {r: read_json(os.path.join(workdir, f"round_{r}", "eval.json")) for r in range(rounds + 1)}
    rows = {}
    for r in range(rounds + 1):
        if evals[r] is not None:
            synth = read_json(os.path.join(workdir, f"round_{r}", "synth", SYNTH_KEY))
            rm_eval = read_json(os.path.join(workdir, f"round_{r}", "rm_eval", "results.json"))
            rows[str(r)] = round_row(evals[r], evals[0], synth, rm_eval and rm_eval["metrics"],
                                     read_json(os.path.join(workdir, f"round_{r}", RM_DATA_KEY)))
    # per-task outcomes of every round as the experiment runner reads a job's stages (gui_jax/experiment.py)
    stages = {f"round_{r}": {"online_task_ids": evals[int(r)]["task_ids"], "online_success": rows[r]["success"]}
              for r in rows}
    rm_rounds = read_json(os.path.join(workdir, ROUNDS_KEY))   # compare_rounds's, with co-evolution
    out = {"task_ids": evals[0]["task_ids"], "rounds": rows, "stages": stages, **extra}
    table = format_rounds(rows)
    if rm_rounds:  # also a table of the experiment runner's report (gui_jax/experiment.py job_tables)
        rm_table = format_rm_rounds(rm_rounds)
        out.update(rm_rounds=rm_rounds, report_tables={"the reward model round by round": rm_table})
        table += "\n\nThe reward model round by round (the same held-out records each round):\n\n" + rm_table
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump(out, f, indent=1)
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(f"# Self-improvement rounds on {len(out['task_ids'])} held-out {where} tasks\n\n{table}\n\n"
                "online SR: greedy; [lo, hi] = Wilson 95 % interval; p = exact McNemar, two-sided, paired with "
                "round 0 on the same tasks\n" + common.overlap_lines(out))
    print(table)
    return out


# ------------------------------------------------------------------------------------------ the job
def _sft_done(folder: str, num_steps: int) -> bool:
    steps = checkpoint_steps(os.path.join(folder, "checkpoints"))
    return bool(steps) and steps[-1] >= num_steps


def round_rm(config, rdir: list, r: int):
    """The RM round r searched with and was judged as: the configured one, then each round's retrained one."""
    if r == 0:
        return load_reward_model(config, "self_improve")[0]
    return load_policy(config, os.path.join(rdir[r - 1], "rm", "checkpoints"),
                       f"self_improve (round_{r - 1}/rm/checkpoints)")[0]


def run(config, workdir: str) -> None:
    from gui_jax.eval.online_success import run_online_episodes
    from gui_jax.jobs.reward_model import build_reward_data, rm_configs
    from gui_jax.rewards.likelihood import make_scorer
    from gui_jax.rewards.data_engine import write_records
    from gui_jax.train.logger import MetricsLogger
    from gui_jax.train.rm_training import train_reward_model
    from gui_jax.train.sft import train_sft
    check_self_improve_config(config)
    os.makedirs(workdir, exist_ok=True)
    si, R = config.self_improve, int(config.self_improve.rounds)
    co_evolve = bool(si.get("rm_retrain", False))
    search = bool(si.get("synthesise", True))  # False: the expert-only control (same rounds and SFT steps)
    progress = bool(si.get("progress", True))
    common.check_reachable(config)  # an offline device or server stops here, in one line
    # the RM's held-out records come from the test side's expert episodes
    test_tasks, train_eps, test_eps = expert_and_test_episodes(config, workdir, with_test=co_evolve)
    env = config.get("env")
    test_tasks = held_out_tasks(config, test_tasks, env.eval_seeds if env is not None else None)
    rdir = [os.path.join(workdir, f"round_{r}") for r in range(R + 1)]

    def rm_done(r):
        return not co_evolve or r == R or (os.path.exists(os.path.join(rdir[r], RM_DATA_KEY))
                                           and _sft_done(os.path.join(rdir[r], "rm"), si.rm_train.num_steps))

    def complete(r):
        return os.path.exists(os.path.join(rdir[r], "eval.json")) and rm_done(r) and (
            not co_evolve or os.path.exists(os.path.join(rdir[r], "rm_eval", "results.json"))) and (
            r == R or (load_synth(os.path.join(rdir[r], "synth")) is not None
                       and _sft_done(os.path.join(rdir[r], "sft"), si.sft.num_steps)))
    start = next((r for r in range(R + 1) if not complete(r)), None)
    t0 = time.time()
    extra = {"profile": {}, "expert_templates": list(si.get("expert_templates") or config.data.templates),
             **common.checkpoint_overlaps(test_tasks, policy=si.policy_checkpoint_dir,
                                          reward_model=si.get("rm_checkpoint_dir", ""))}
    pcfg, rcfg = rm_configs(config)
    if co_evolve:  # the held-out records every round's RM is judged on
        test_data = build_reward_data(test_eps, np.random.default_rng(int(config.rm.data.seed) + 1),
                                      core_rm_data(config))
    if start is not None:
        render = pcfg.observation in ("screenshot", "both")
        logger = MetricsLogger(workdir)
        if start == 0:
            agent, source = load_policy(config, si.policy_checkpoint_dir, "self_improve.policy_checkpoint_dir")
            if not si.policy_checkpoint_dir and config.sft.num_steps > 0:
                train_sft(agent, train_eps, pcfg, config.sft, workdir=os.path.join(workdir, "init_sft"),
                          logger=logger, prefix="init_sft")
        else:
            agent, _ = load_policy(config, os.path.join(rdir[start - 1], "sft", "checkpoints"),
                                   f"self_improve (round_{start - 1}/sft/checkpoints)")
        if search:  # with co-evolution from round 1 on, the RM the last finished round retrained
            rm = round_rm(config, rdir, start if co_evolve else 0)
        propose = policy_proposer(agent.policy, pcfg, temperature=si.temperature, render=render)
        score_many = rm_step_scorer(rm, pcfg, rcfg) if search else None
        make_env = episode_env_factory(config, si.max_steps, render)
        rounds_synth = [load_synth(os.path.join(rdir[r], "synth")) for r in range(start)]
        synth_all = [ep for x in rounds_synth for ep in x[0]]
        if co_evolve:
            base = build_reward_data(train_eps, np.random.default_rng(int(config.rm.data.seed)), core_rm_data(config))
        for r in range(start, R + 1):
            os.makedirs(rdir[r], exist_ok=True)
            ev_path = os.path.join(rdir[r], "eval.json")
            if not os.path.exists(ev_path):
                recs = run_online_episodes(agent.policy, test_tasks, pcfg, trials=1, temperature=0.0,
                                           resolution=tuple(config.data.resolution), max_steps=si.max_steps,
                                           seed=int(config.seed), progress=progress, env_cfg=env)
                with open(ev_path, "w") as f:
                    json.dump({"task_ids": [x["task_id"] for x in recs],
                               "success": [int(x["success"]) for x in recs],
                               "steps": [int(x["steps"]) for x in recs]}, f, indent=1)
            print(f"[round {r}] online SR {json.load(open(ev_path))['success'].count(1)}/{len(test_tasks)}",
                  flush=True)
            if co_evolve:
                m = rm_round_eval(rm, test_data, pcfg, rcfg, os.path.join(rdir[r], "rm_eval"))
                print(f"[round {r}] reward model held-out step F1 {f1_of(m, 'step'):.3f}, outcome F1 "
                      f"{f1_of(m, 'outcome'):.3f}", flush=True)
            if r == R:
                break
            folder = os.path.join(rdir[r], "synth")
            loaded = load_synth(folder)
            if loaded is None:
                tasks = synth_tasks(config, r, held_out=test_tasks) if search else []
                eps, failed = synthesise(tasks, make_env, propose, score_many, si, progress=progress) if search \
                    else ([], [])
                save_synth(folder, eps, tasks, failed)
                loaded = load_synth(folder)
            rounds_synth.append(loaded)
            synth_all += loaded[0]
            print(f"[round {r}] synthesised {len(loaded[0])} successful trajectories "
                  f"({len(loaded[1]['searched'])} tasks searched, {len(loaded[2])} failed trajectories kept)",
                  flush=True)
            sft_cfg = ml_collections.ConfigDict(si.sft.to_dict())
            sft_cfg.seed = int(si.sft.seed) + r
            train_sft(agent, list(train_eps) + synth_all, pcfg, sft_cfg, workdir=os.path.join(rdir[r], "sft"),
                      logger=logger, prefix=f"round_{r}_sft")
            if co_evolve:  # UI-Genie's co-evolution: the RM too learns from every round's trajectories so far
                keep_failed = bool(si.get("rm_failed_outcomes", True))
                records, lookup, produced = grown_rm_data(base.records, base.episodes,
                                                          [(x[0], x[2] if keep_failed else []) for x in rounds_synth])
                write_records(os.path.join(rdir[r], "rm_records.jsonl"), records)
                rm_cfg = ml_collections.ConfigDict(si.rm_train.to_dict())
                rm_cfg.seed = int(si.rm_train.seed) + r
                train_reward_model(rm, records, lookup, pcfg, rcfg, rm_cfg, workdir=os.path.join(rdir[r], "rm"),
                                   logger=logger, prefix=f"round_{r}_rm")
                with open(os.path.join(rdir[r], RM_DATA_KEY), "w") as f:
                    json.dump({"base": len(base.records), "produced": len(produced[-1]),
                               "produced_by_round": [len(x) for x in produced], "total": len(records)}, f, indent=1)
                score_many = rm_step_scorer(rm, pcfg, rcfg)
        logger.close()
        extra["profile"]["seconds_this_run"] = round(time.time() - t0, 1)
    if co_evolve:
        for r in range(R + 1):  # from each round's saved scores; a round's RM is loaded only for uncovered prefixes
            add_prefix_min(os.path.join(rdir[r], "rm_eval"), test_data,
                           lambda recs, r=r: make_scorer(round_rm(config, rdir, r), test_data.episodes, pcfg,
                                                         rcfg).score(recs))
        compare_rounds(workdir, R, test_data)
    write_results(workdir, R, extra, where=common.backend_name(config))
