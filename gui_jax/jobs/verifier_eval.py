"""Job: the best-of-n verifier at test time (GUI-Shepherd Alg. 2, docs/algorithms.md §9) on held-out tasks, its
success rate against n.

    python -m gui_jax.main --config configs/verifier_eval.py \
        --config.verifier.policy_checkpoint_dir=runs/quickstart/rl/checkpoints \
        --config.verifier.rm_checkpoint_dir=runs/reward_model/rm/checkpoints
    ... --config.env.backend=androidworld --config.env.server_urls='("http://127.0.0.1:5000",)'
Episodes run on `config.env` (gui_jax/envs/factory.py): PhoneSim (the split's held-out tasks at data.resolution)
by default, else env.backend's tasks (env.tasks × env.seeds), one env at a time.

At every step the policy samples n candidate actions at `verifier.temperature` and the reward model's step
score P(+) picks one (first on ties); the env's own success check ends the episode. Every n runs on the same
tasks with the same per-task seed, so each n is paired with n = 1 on the same tasks (exact McNemar).
With `verifier.greedy_baseline` the plain greedy policy (no verifier) runs on the same tasks too.
Outputs: results.json (per n: successes, SR, Wilson 95 % interval, per-task outcomes, p vs n = 1; "greedy";
"stages": each n as a stage for experiments/verifier_n.py) and results.md. Deterministic for one config and seed ("profile" holds the wall time).

The pieces here are shared with the self_improve job: `policy_proposer` (the policy as a proposer of
candidate actions), `rm_step_scorer` (the RM as a batched step scorer of live partial trajectories),
`load_policy` / `load_reward_model` (weights from Orbax stage folders or Hugging Face directories).
"""
from __future__ import annotations

import copy
import json
import os
import time
from typing import Callable, Optional, Sequence

from gui_jax.core.progress import progress as progress_bar

from gui_jax.config_check import ConfigError, RunError
from gui_jax.core.dialects import ActionParseError, parse_response, scale_action_to_screen
from gui_jax.core.labels import label_to_element
from gui_jax.core.types import Action, Episode
from gui_jax.eval.metrics import mcnemar_exact, paired_counts, wilson_interval
from gui_jax.jobs import common
from gui_jax.rewards.data_engine import RewardRecord, StepRef
from gui_jax.rewards.search import run_with_verifier
from gui_jax.rl.prompting import PromptConfig, build_messages, expert_response

# Stand-in for a response that does not parse: PhoneSim leaves the screen as it is and the step counts (as a
# wasted step does in the online evaluation).
NO_OP = Action("wait", time=1.0)
LIVE_ID = "live"


# ------------------------------------------------------------------------------------------ config
def _fail(path: str, value, problem: str):
    raise ConfigError(f"config.{path} = {value!r}: {problem}")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_rm_source(config, block: str) -> None:
    """Exactly one reward-model source: rm_checkpoint_dir (Orbax), rm_hf_dir (HF folder) or rm_untrained."""
    b = config[block]
    given = [k for k in ("rm_checkpoint_dir", "rm_hf_dir") if b.get(k)]
    if len(given) > 1:
        _fail(f"{block}.rm_hf_dir", b.rm_hf_dir, f"set either {block}.rm_checkpoint_dir or {block}.rm_hf_dir")
    if not given and not b.get("rm_untrained", False):
        _fail(f"{block}.rm_checkpoint_dir", b.get("rm_checkpoint_dir", ""),
              "a trained reward model is needed: set it (e.g. runs/reward_model/rm/checkpoints) or "
              f"{block}.rm_hf_dir (a Hugging Face directory), or {block}.rm_untrained=True for a random RM")
    if given and b.get("rm_untrained", False):
        _fail(f"{block}.rm_untrained", True, f"contradicts {block}.{given[0]}; set one of them")


def check_search_fields(config, block: str) -> None:
    b = config[block]
    if not isinstance(b.temperature, (int, float)) or isinstance(b.temperature, bool) or b.temperature < 0:
        _fail(f"{block}.temperature", b.temperature, "expected a number ≥ 0")
    if not _is_int(b.max_steps) or b.max_steps < 1:
        _fail(f"{block}.max_steps", b.max_steps, "expected an integer ≥ 1")
    if not _is_int(b.seed):
        _fail(f"{block}.seed", b.seed, "expected an integer")


def check_verifier_config(config) -> None:
    """ConfigError naming the first bad field (the shared blocks first, then `verifier`)."""
    from gui_jax.config_check import check_config
    check_config(config)
    if "verifier" not in config:
        raise ConfigError("config has no 'verifier' block; start from configs/verifier_eval.py")
    v = config.verifier
    ns = v.ns
    if (isinstance(ns, (str, bytes)) or not isinstance(ns, (tuple, list)) or not ns
            or not all(_is_int(n) for n in ns)):
        _fail("verifier.ns", ns, "expected a non-empty tuple of integers, e.g. (1, 2, 4, 8)")
    if any(n < 1 for n in ns):
        _fail("verifier.ns", tuple(ns), f"every n must be ≥ 1 (got {min(ns)})")
    if len(set(ns)) != len(ns) or 1 not in ns:
        _fail("verifier.ns", tuple(ns), "expected distinct values including 1 (every n is compared with n = 1)")
    check_search_fields(config, "verifier")
    check_rm_source(config, "verifier")


# ------------------------------------------------------------------------------------------ weights
def _model_config(config, hf_dir: str = ""):
    """A copy of the config whose model block loads `hf_dir` (when given)."""
    cfg = copy.deepcopy(config)
    if hf_dir:
        cfg.model.checkpoint = hf_dir
    return cfg


def load_policy(config, checkpoint_dir: str, field: str):
    """(agent, source): the configured model (preset or model.checkpoint) with a stage folder's params."""
    from gui_jax.rl.agent import Agent
    agent = Agent(config, seed=config.seed)
    if config.model.get("checkpoint"):
        source = {"kind": "huggingface", "path": os.path.abspath(config.model.checkpoint)}
    else:
        source = {"kind": "untrained", "preset": config.model.preset, "seed": int(config.seed)}
    if checkpoint_dir:
        params, step = common.load_stage_params(checkpoint_dir, field=field)
        common.set_agent_params(agent, params, checkpoint_dir)
        source = {"kind": "orbax", "path": os.path.abspath(checkpoint_dir), "step": int(step)}
    return agent, source


def load_reward_model(config, block: str):
    """(agent, source) of the RM named by config.<block>: rm_checkpoint_dir (Orbax, as the reward_model job
    writes under rm/checkpoints), rm_hf_dir (a Hugging Face directory) or rm_untrained."""
    b = config[block]
    if b.get("rm_hf_dir"):
        from gui_jax.rl.agent import Agent
        agent = Agent(_model_config(config, b.rm_hf_dir), seed=config.seed)
        return agent, {"kind": "huggingface", "path": os.path.abspath(b.rm_hf_dir)}
    return load_policy(config, b.get("rm_checkpoint_dir", ""), f"{block}.rm_checkpoint_dir")


# ------------------------------------------------------------------------------------------ proposer / scorer
def response_action(text: str, obs, pcfg: PromptConfig, render: bool) -> Action:
    """The action a response names, in screen pixels (a click by label as the element it names on this screen);
    NO_OP when it does not parse or its label names no element."""
    try:
        _, action = parse_response(text, pcfg.dialect)
    except ActionParseError:
        return NO_OP
    action = label_to_element(action, obs.ui_elements)
    if action.type in ("click", "long_press") and action.x is None and action.element is None:
        return NO_OP
    if action.x is not None and render:  # pixels of the screenshot the model saw → screen pixels
        action = scale_action_to_screen(action, (obs.screenshot.shape[1], obs.screenshot.shape[0]), obs.screen_size)
    return action


def action_response(action: Action, obs, pcfg: PromptConfig) -> str:
    """An earlier step's action as the policy writes it (the form SFT taught it)."""
    try:
        return expert_response(action, obs, pcfg)
    except ValueError:
        return str(action)


def policy_proposer(policy, pcfg: PromptConfig, *, temperature: float, render: bool) -> Callable:
    """propose(goal, history, obs, n, rng) -> n sampled actions (one batched policy call, seed from rng)."""
    def propose(goal, history, obs, n, rng):
        past = [(o, action_response(a, o, pcfg)) for o, a in history]
        prompt = build_messages(goal, past, obs, pcfg)
        gens = policy.generate([prompt] * n, temperature=float(temperature), seed=int(rng.integers(2 ** 31 - 1)))
        return [response_action(g.text, obs, pcfg, render) for g in gens]
    return propose


def rm_step_scorer(rm_agent, pcfg: PromptConfig, rcfg) -> Callable:
    """score_many(goal, history, obs, actions) -> P(+) per candidate: each candidate as the last step of a
    step record over a temporary episode holding the partial trajectory (docs/algorithms.md §9); `rcfg.scorer`
    picks the verdict RM or a policy's own likelihood."""
    from gui_jax.rewards.likelihood import make_scorer
    if getattr(rcfg, "history_min", False):
        raise ValueError("rm.model.history_min is for judging records: the verifier ranks candidates after one "
                         "shared history, whose floor would only tie them; set it to False here")
    scorer = make_scorer(rm_agent, {}, pcfg, rcfg)

    def score_many(goal, history, obs, actions):
        if not actions:
            return []
        scorer.episodes = {LIVE_ID: Episode(LIVE_ID, goal, [o for o, _ in history] + [obs],
                                            [a for _, a in history] + [actions[0]])}
        prefix = tuple(StepRef(LIVE_ID, t) for t in range(len(history)))
        records = [RewardRecord("step", goal, prefix + (StepRef(LIVE_ID, len(history), a),), True, "rule")
                   for a in actions]
        rows = min(rcfg.batch_size, 1 << (len(records) - 1).bit_length())  # few row shapes, little padding
        return scorer.score(records, batch_size=rows).tolist()
    return score_many


def sim_factory(resolution, max_steps: int, render: bool) -> Callable:
    from gui_jax.envs.sim.phonesim import PhoneSim
    return lambda: PhoneSim(render=render, resolution=tuple(resolution), max_steps=max_steps, tree=True)


def episode_env_factory(config, max_steps: int, render: bool) -> Callable:
    """() -> a new env for one episode (the verifier and beam search rebuild and replay it): PhoneSim at
    data.resolution for env.backend = phonesim (or no env block), else env.backend's env of slot 0
    (gui_jax/envs/factory.py)."""
    from gui_jax.envs.factory import backend_of, make_env_factory
    env = config.get("env")
    if env is None or backend_of(env) == "phonesim":
        return sim_factory(config.data.resolution, max_steps, render)
    make = make_env_factory(env, render=render, max_steps=max_steps)
    return lambda: make(0)


def held_out_tasks(config, test_tasks, seeds=None) -> list:
    """The evaluated tasks: env.backend's own (env.tasks × `seeds`, default env.seeds), else the split's; a
    RunError when none are left."""
    tasks = common.backend_or_split_tasks(config, test_tasks, seeds)
    if not tasks:
        d = config.data
        raise RunError(f"no held-out tasks left after filtering (data.templates={list(d.templates)}, "
                       f"data.difficulties={list(d.difficulties)}, data.max_optimal_steps={d.max_optimal_steps}, "
                       f"data.test_seed_range={tuple(d.test_seed_range)})")
    return tasks


# ------------------------------------------------------------------------------------------ the evaluation
def verifier_outcomes(tasks: Sequence, make_env: Callable, propose: Callable, score_many: Callable,
                      ns: Sequence[int], *, max_steps: int, seed: int = 0, progress: bool = False) -> dict:
    """{n: [{"task_id", "success", "steps"}] in task order}; task i runs with seed `seed + i` for every n."""
    out = {int(n): [] for n in ns}
    bar = progress_bar(total=len(ns) * len(tasks), desc="verifier episodes", unit="ep", disable=not progress)
    try:
        for n in ns:
            for i, task in enumerate(tasks):
                r = run_with_verifier(task, make_env, propose, None, n=int(n), max_steps=max_steps,
                                      seed=seed + i, score_many=score_many)
                out[int(n)].append({"task_id": task.task_id, "success": bool(r["success"]), "steps": r["steps"]})
                bar.update(1)
    finally:
        bar.close()
    return out


def summarise(outcomes: dict, reference: int = 1) -> dict:
    """Per n: successes, episodes, SR, Wilson 95 % interval, per-task outcomes and, against n = `reference`
    on the same tasks, the discordant pairs (b = lost, c = gained) and the exact McNemar p."""
    ref = outcomes[reference]
    by_n = {}
    for n, recs in outcomes.items():
        if [r["task_id"] for r in recs] != [r["task_id"] for r in ref]:
            raise ValueError(f"n={n} ran other tasks than n={reference}; the paired test needs the same tasks")
        s = [int(r["success"]) for r in recs]
        k, total = int(sum(s)), len(s)
        lo, hi = wilson_interval(k, total)
        b, c = paired_counts([r["success"] for r in ref], s)
        by_n[str(n)] = {"n": int(n), "successes": k, "episodes": total, "SR": k / total if total else float("nan"),
                        "ci95": [lo, hi], f"lost_vs_n{reference}": b, f"gained_vs_n{reference}": c,
                        f"mcnemar_p_vs_n{reference}": mcnemar_exact([r["success"] for r in ref], s),
                        "success": s, "steps": [int(r["steps"]) for r in recs]}
    return {"task_ids": [r["task_id"] for r in ref], "by_n": by_n}


def baseline_row(success: Sequence[int], n1: Sequence[int], steps: Sequence[int] = ()) -> dict:
    """SR, Wilson interval and McNemar p against n = 1 of a reference run on the same tasks."""
    k, total = int(sum(success)), len(success)
    b, c = paired_counts(n1, success)
    return {"successes": k, "episodes": total, "SR": k / total, "ci95": list(wilson_interval(k, total)),
            "lost_vs_n1": b, "gained_vs_n1": c, "mcnemar_p_vs_n1": mcnemar_exact(n1, success),
            "success": list(success), "steps": list(steps)}


def format_results(summary: dict, reference: int = 1) -> str:
    lines = [f"| n | SR [95 % Wilson] | successes | Δ SR vs n={reference} (lost/gained, exact McNemar p) |",
             "|---|---|---|---|"]
    base = summary["by_n"][str(reference)]["SR"]
    for key in sorted(summary["by_n"], key=int):
        r = summary["by_n"][key]
        lo, hi = r["ci95"]
        cmp = ("(reference)" if r["n"] == reference else
               f"{r['SR'] - base:+.3f} ({r[f'lost_vs_n{reference}']}/{r[f'gained_vs_n{reference}']}, "
               f"p={r[f'mcnemar_p_vs_n{reference}']:.3g})")
        lines.append(f"| {r['n']} | {r['SR']:.3f} [{lo:.3f}, {hi:.3f}] | {r['successes']}/{r['episodes']} | {cmp} |")
    g = summary.get("greedy")
    if g is not None:
        lines.append(f"| greedy, no verifier | {g['SR']:.3f} [{g['ci95'][0]:.3f}, {g['ci95'][1]:.3f}] | "
                     f"{g['successes']}/{g['episodes']} | {g['SR'] - base:+.3f} ({g['lost_vs_n1']}/"
                     f"{g['gained_vs_n1']}, p={g['mcnemar_p_vs_n1']:.3g}) |")
    return "\n".join(lines)


def experiment_stages(summary: dict) -> dict:
    """{"n=<n>": {"online_success", "online_task_ids"}, "greedy": ...}: each n (and the greedy baseline) as a stage
    the experiment runner reads (gui_jax/experiment.py: an arm {"results_of": <verifier arm>, "stage": "n=8"})."""
    ids = list(summary["task_ids"])
    rows = {f"n={key}": r for key, r in summary["by_n"].items()}
    if summary.get("greedy") is not None:
        rows["greedy"] = summary["greedy"]
    return {name: {"online_success": list(r["success"]), "online_task_ids": ids} for name, r in rows.items()}


def write_results(summary: dict, workdir: str, extra: Optional[dict] = None, title: str = "",
                  where: str = "PhoneSim") -> dict:
    out = {**summary, "stages": experiment_stages(summary), **(extra or {})}
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump(out, f, indent=1)
    table = format_results(summary)
    n_tasks = len(summary["task_ids"])
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(f"# {title or 'Best-of-n verifier'} on {n_tasks} held-out {where} tasks\n\n{table}\n\n"
                f"[lo, hi] = Wilson 95 % interval; p = exact McNemar, two-sided, paired on the same tasks\n"
                + common.overlap_lines(out))
    print(table)
    return out


def run(config, workdir: str) -> None:
    from gui_jax.jobs.reward_model import rm_configs
    check_verifier_config(config)
    os.makedirs(workdir, exist_ok=True)
    v = config.verifier
    common.check_reachable(config)  # an offline device or server stops here, in one line
    _, test_tasks, _, _ = common.prepare(config, workdir, sides=())
    test_tasks = held_out_tasks(config, test_tasks)
    policy, policy_source = load_policy(config, v.policy_checkpoint_dir, "verifier.policy_checkpoint_dir")
    rm, rm_source = load_reward_model(config, "verifier")
    overlaps = common.checkpoint_overlaps(test_tasks, policy=v.policy_checkpoint_dir,
                                   reward_model=v.get("rm_checkpoint_dir", ""))
    pcfg, rcfg = rm_configs(config)
    render = pcfg.observation in ("screenshot", "both")
    print(f"verifier: policy {policy_source}, reward model {rm_source}; n in {tuple(v.ns)} on "
          f"{len(test_tasks)} held-out tasks")
    t0 = time.time()
    outcomes = verifier_outcomes(test_tasks, episode_env_factory(config, v.max_steps, render),
                                 policy_proposer(policy.policy, pcfg, temperature=v.temperature, render=render),
                                 rm_step_scorer(rm, pcfg, rcfg), tuple(v.ns), max_steps=v.max_steps,
                                 seed=int(v.seed), progress=bool(v.get("progress", True)))
    summary = summarise(outcomes)
    if v.get("greedy_baseline", False):  # the plain policy (greedy, no verifier) on the same tasks
        from gui_jax.eval.online_success import run_online_episodes
        recs = run_online_episodes(policy.policy, test_tasks, pcfg, trials=1, temperature=0.0,
                                   resolution=tuple(config.data.resolution), max_steps=v.max_steps,
                                   seed=int(config.seed), env_cfg=config.get("env"))
        summary["greedy"] = baseline_row([int(r["success"]) for r in recs], summary["by_n"]["1"]["success"],
                                         [int(r["steps"]) for r in recs])
    write_results(summary, workdir,
                  extra={"policy": policy_source, "reward_model": rm_source, **overlaps,
                         "temperature": float(v.temperature),
                         "max_steps": int(v.max_steps), "seed": int(v.seed),
                         "profile": {"seconds": round(time.time() - t0, 1)}}, where=common.backend_name(config))
