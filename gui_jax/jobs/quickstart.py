"""The main job: the tiny agent on PhoneSim, end to end.

expert episodes (train split) → [evaluate untrained, eval.before_training] → SFT (or init.checkpoint_dir: a
stage's checkpoints to start from instead, e.g. one SFT shared by the arms of an ablation) → evaluate →
[reasoning SFT (MobileRL's warm-up, `reasoning_sft = True`; the `reasoning` block) → evaluate] →
semi-online RL → evaluate, each evaluation on the held-out split: SOP (PG, TSR, Score), step
metrics with the expert history (TM, GR, SR) and online success in PhoneSim, every success rate
with its Wilson 95 % interval and each stage paired against the one before on the same tasks
(exact McNemar). Resumable: finished stages are not redone.
Outputs in the workdir: episodes/, sft/, reasoning/ and rl/ checkpoints, metrics.jsonl + TensorBoard logs,
training_curves.png, results.json and results.md.

results.json = {"stages": {stage: metrics}, "profile": {stage: wall/CPU/compile seconds}} (and
"held_out_vs_start": the start checkpoint's training tasks among the held-out ones, with init); for one
config and seed on one machine "stages" (and so the table) repeats exactly; "profile" is timing.
"""
from __future__ import annotations

import json
import os
import resource
import time
from contextlib import contextmanager

import jax
from absl import logging

from gui_jax.config_check import ConfigError
from gui_jax.eval.suite import evaluate_agent, format_table, split_timings, template_table
from gui_jax.host_malloc import applied_policy
from gui_jax.jobs.common import checkpoint_overlaps, overlap_lines, prepare, starting_point
from gui_jax.rl.agent import Agent
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.reasoning_sft import reasoning_bootstrap
from gui_jax.train.semi_online import train_offline_rl, train_semi_online

_COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                   "/jax/core/compile/backend_compile_duration")


def _peak_rss_mb() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


class StageProfiler:
    """Wall, process CPU (all threads) and JAX compile seconds per named stage, and the peak RSS when it ended."""

    def __init__(self):
        self.stages: dict[str, dict] = {}
        self._compile = 0.0
        jax.monitoring.register_event_duration_secs_listener(self._on_event)

    def _on_event(self, name, duration, **_):
        if name in _COMPILE_EVENTS:
            self._compile += duration

    @contextmanager
    def stage(self, name: str):
        w, c, k = time.time(), time.process_time(), self._compile
        try:
            yield
        finally:
            # ru_maxrss is the process's running peak: a stage whose value jumps is the one that set it
            self.stages[name] = {"wall_s": round(time.time() - w, 2), "cpu_s": round(time.process_time() - c, 2),
                                 "compile_s": round(self._compile - k, 2), "peak_rss_mb_after": _peak_rss_mb()}

    def summary(self) -> str:
        return "; ".join(f"{n} {v['wall_s']:.0f}s (cpu {v['cpu_s']:.0f}s, compile {v['compile_s']:.0f}s, "
                         f"peak {v['peak_rss_mb_after']} MB)" for n, v in self.stages.items())


def rl_episodes(config, workdir: str, sft_episodes: list) -> list:
    """The episodes semi-online RL draws its tasks from: the SFT's, or with data.rl_train_episodes = N above
    data.num_train_episodes the first N of the same train-split selection (the SFT's first: the selection is a
    round-robin over templates, so a longer one extends a shorter), cached under <workdir>/rl_pool; with
    data.rl_unseen_only the SFT's are left out. An SFT start that has fitted its own episodes leaves RL on them
    few failures to learn from."""
    n = int(config.data.get("rl_train_episodes", 0))
    unseen_only = bool(config.data.get("rl_unseen_only", False))
    if n <= len(sft_episodes):
        if unseen_only:
            raise ValueError(f"data.rl_unseen_only needs data.rl_train_episodes ({n}) above data.num_train_episodes "
                             f"({len(sft_episodes)}): no task is left that SFT never saw")
        return sft_episodes
    pool = config.copy_and_resolve_references()
    pool.data.num_train_episodes = n
    episodes = prepare(pool, os.path.join(workdir, "rl_pool"), sides=("train",), reuse_from=workdir)[2]
    if [e.episode_id for e in episodes[:len(sft_episodes)]] != [e.episode_id for e in sft_episodes]:
        raise RuntimeError(f"the RL pool's first {len(sft_episodes)} episodes are not the SFT's: the task selection "
                           f"no longer extends a shorter one (jobs/common.py select_tasks)")
    if unseen_only:
        episodes = episodes[len(sft_episodes):]
        print(f"semi-online RL draws from {len(episodes)} train episodes, none of them SFT's")
    else:
        print(f"semi-online RL draws from {len(episodes)} train episodes ({len(episodes) - len(sft_episodes)} "
              f"unseen by SFT)")
    return episodes


def uncut_responses_problem(episodes, pcfg, max_new_tokens: int, count_tokens) -> str:
    """'' when every expert response of `episodes` (its tokens + the end token, `count_tokens(text)`) fits the
    decode budget; else one line naming how many do not, the longest and the budget it needs: a policy that
    cannot finish the expert's answer fails those tasks however well it learns them."""
    from gui_jax.rl.prompting import expert_response
    from gui_jax.rl.semi_online_rollout import expert_element
    lengths = [(count_tokens(r) + 1, r) for ep in episodes for t in range(len(ep.actions))
               for r in [expert_response(ep.actions[t], ep.observations[t], pcfg, element=expert_element(ep, t))]]
    cut = [(n, r) for n, r in lengths if n > max_new_tokens]
    if not cut:
        return ""
    n, longest = max(cut)
    return (f"model.max_new_tokens = {max_new_tokens} cuts {len(cut)} of {len(lengths)} expert responses of the "
            f"train episodes (the longest, {n} tokens with the end token: {longest!r}): set at least {n}")


def offline_reward_scorer(config, pcfg):
    """The reward model that scores offline RL's samples (rl.offline_reward = rm: rl.rm_checkpoint_dir, scored as
    rl.rm_scorer with the reward_model recipe's default prompt settings); None for the rule reward."""
    if config.rl.get("offline_reward", "rule") != "rm":
        return None
    if not config.get("offline_rl_baseline"):
        raise ConfigError("config.rl.offline_reward = 'rm' rewards the offline-RL baseline: set "
                         "config.offline_rl_baseline=True")
    if not config.rl.get("rm_checkpoint_dir"):
        raise ConfigError("config.rl.rm_checkpoint_dir = '': rl.offline_reward = 'rm' needs the reward_model job's "
                         "rm/checkpoints")
    from gui_jax.jobs.verifier_eval import load_policy
    from gui_jax.rewards.likelihood import make_scorer
    from gui_jax.rewards.rm_scoring import RewardModelConfig
    rm_agent, _ = load_policy(config, config.rl.rm_checkpoint_dir, "rl.rm_checkpoint_dir")
    return make_scorer(rm_agent, {}, pcfg, RewardModelConfig(scorer=config.rl.rm_scorer))


def run(config, workdir: str) -> None:
    start, cpu_start = time.time(), time.process_time()
    semi_online = config.get("semi_online_rl", True)
    if not (semi_online or config.get("offline_rl_baseline")):
        print("config.semi_online_rl = False and config.offline_rl_baseline = False: SFT alone (the start of "
              "other RL jobs)")
    prof = StageProfiler()
    with prof.stage("episodes"):
        train_tasks, test_tasks, train_eps, test_eps = prepare(config, workdir)
    print(f"{len(train_eps)} train episodes ({sum(len(e) for e in train_eps)} steps), "
          f"{len(test_eps)} held-out episodes / online tasks")
    agent = Agent(config, seed=config.seed)
    print(f"model: {config.model.preset} ({agent.num_params() / 1e6:.2f}M params)")
    pcfg = PromptConfig(**config.prompt.to_dict())
    cut = uncut_responses_problem(train_eps, pcfg, int(config.model.max_new_tokens),
                                  lambda text: len(agent.tokenizer.encode(text)))
    if cut:
        print(f"warning: {cut}", flush=True)
    reward_scorer = offline_reward_scorer(config, pcfg)  # before any training: a bad RM setting fails first
    logger = MetricsLogger(workdir)
    results_path = os.path.join(workdir, "results.json")
    saved = json.load(open(results_path)) if os.path.exists(results_path) else {}
    results, profile = saved.get("stages", {}), saved.get("profile", {})
    profile["episodes"] = prof.stages["episodes"]

    def save():
        with open(results_path, "w") as f:
            json.dump({**saved, "stages": results, "profile": profile}, f, indent=1)

    def stage_eval(name: str, step: int):
        if name not in results:
            with prof.stage(f"eval_{name}"):
                results[name], timings = split_timings(evaluate_agent(agent, test_eps, test_tasks, pcfg, config))
            profile[f"eval_{name}"] = {**prof.stages[f"eval_{name}"], **timings}
            save()
        logger.write(step, {k: v for k, v in results[name].items() if isinstance(v, float)}, prefix="eval")
        print(f"[{name}] " + ", ".join(f"{k}={v:.3f}" for k, v in results[name].items()
                                       if k in ("SOP_Score", "SR", "online_SR")), flush=True)

    def timed(name, fn, *a, **kw):
        with prof.stage(name):
            fn(*a, **kw)
        profile.setdefault(name, prof.stages[name])

    if config.eval.get("before_training", True):
        stage_eval("untrained", 0)
    init_ckpt = config.init.checkpoint_dir if config.get("init") else ""
    if init_ckpt:  # another run's SFT (e.g. arms of an ablation sharing one): the `sft` stage evaluates it
        saved.update(checkpoint_overlaps(test_tasks, start=init_ckpt))  # "held_out_vs_start"
        print(overlap_lines(saved), end="")
    timed("start" if init_ckpt else "train_sft", starting_point, agent, config, workdir, train_eps, pcfg, logger)
    stage_eval("sft", config.sft.num_steps)
    rl_start, done_steps = "sft", config.sft.num_steps   # the stage RL starts from, and the steps trained so far
    if config.get("reasoning_sft"):  # MobileRL: reasoning-free SFT → reasoning SFT → RL
        timed("train_reasoning_sft", reasoning_bootstrap, agent, train_eps, pcfg, config.reasoning,
              workdir=os.path.join(workdir, "reasoning"), logger=logger)
        done_steps += config.reasoning.rounds * config.reasoning.sft.num_steps
        stage_eval("reasoning_sft", done_steps)
        rl_start = "reasoning_sft"
    # each RL stage against the weights it started from (the default pairs a stage with the one before it)
    compare_to = {"offline_rl": rl_start, "semi_online_rl": rl_start}
    rl_start_params = agent.copy_params()
    rl_eps = rl_episodes(config, workdir, train_eps) if semi_online or config.get("offline_rl_baseline") else []
    if config.get("offline_rl_baseline"):
        timed("train_offline_rl", train_offline_rl, agent, rl_eps, pcfg, config.rl,
              workdir=os.path.join(workdir, "offline_rl"), logger=logger, ref_params=rl_start_params,
              reward_scorer=reward_scorer)
        stage_eval("offline_rl", done_steps + config.rl.iterations)
        agent.set_params(rl_start_params)  # semi-online RL starts from the same weights
    if semi_online:
        timed("train_semi_online_rl", train_semi_online, agent, rl_eps, pcfg, config.rl,
              workdir=os.path.join(workdir, "rl"), logger=logger, ref_params=rl_start_params)
        stage_eval("semi_online_rl", done_steps + config.rl.iterations)
    logger.plot()
    logger.close()
    table = format_table(results, compare_to=compare_to)
    runtime = time.time() - start
    peak_mb = _peak_rss_mb()
    profile["this_run"] = {"wall_s": round(runtime, 1), "cpu_s": round(time.process_time() - cpu_start, 1),
                           "peak_rss_mb": round(peak_mb), "load_avg_1_5_15": [round(x, 2) for x in os.getloadavg()],
                           "cpu_count": os.cpu_count(), "host_malloc": applied_policy(), "stages": prof.stages}
    save()
    n_online = len(next(iter(results.values())).get("online_success", []))
    footer = (f"\nonline SR on {n_online} held-out tasks; [lo, hi] = Wilson 95 % interval; p = exact McNemar, "
              f"two-sided, paired on the same tasks\n"
              f"runtime {runtime / 60:.1f} min this run (CPU {profile['this_run']['cpu_s'] / 60:.1f} min, "
              f"load avg {os.getloadavg()[0]:.1f}), peak memory {peak_mb:.0f} MB (host allocator "
              f"{profile['this_run']['host_malloc']})\n"
              f"time per stage: {prof.summary()}")
    view = (f"\nepisodes: `python -m gui_jax.view {workdir} --out {os.path.join(workdir, 'report.html')}` writes "
            f"one page of this run's episodes (screenshots with the actions drawn; filters by template and outcome)")
    by_template = template_table(results)
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(table + "\n" + footer + "\n\nonline successes by template:\n\n" + by_template + "\n" + view + "\n")
    print("\n" + table + "\n" + footer)
    logging.info("results in %s", workdir)
