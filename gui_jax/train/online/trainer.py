"""Online RL (docs/algorithms.md §5–§8): trajectory GRPO with a curriculum, AdaGRPO, PPO with GAE.

Each iteration: sample `episodes_per_iteration` training tasks (curriculum stage, FCF weights when
enabled) → N rollouts of each through a `RolloutEngine` over an `EnvPool` (in-process PhoneSim, or
env servers when `env.server_urls` is set) → advantages → PPO-clip update (+ β·KL to the frozen
reference) on every step's response tokens, with the behaviour log-probs of the rollout as π_old.

    summary = train_online(agent, train_tasks, pcfg, config.online, env_cfg=config.env, workdir=...)

Algorithms (`online.algorithm`, any name registered in `gui_jax.rl.algorithms`; the trainer calls the
registered `OnlineAlgorithm`'s estimator, loss and hooks and never compares the name; built-ins in
`online/builtin_algorithms.py`):
- grpo: A_i = (R_i − mean)/(std + 1e-6) over the trajectories of one task (groups keyed by task id),
  broadcast to every step and token;
- adagrpo: SPA advantages (`spa`), AdaPR replay (`adapr`) with negative pruning (`prune_negatives`),
  FCF task weights (`fcf`), each a switch; buffer and failure history live in the checkpoint;
- ppo: a critic (value head on a backbone copy, own lr) and GAE over steps or tokens; reward =
  outcome, plus a per-step `reward_fn(trajectory, t)` hook.
Rollouts (`rollout_mode`): sync = lock-step, one engine per iteration, deterministic; async = streaming
(AWG §3.3): one engine for the whole run keeps this iteration's and the next one's groups in flight, the
update starts as soon as the first `episodes_per_iteration` groups are complete, and a group whose first
step is more than `max_staleness` updates old is re-run (logged: policy_lag_mean/max, waited_s).
Rewards (`online/rewards.py`): the env's rule check, or a trained reward model's outcome score
(`reward = rm`, both logged with their agreement); PPO's dense PRM reward (`step_reward = prm`) and a
critic initialised from the RM (`critic_init = rm`).
Episodes hit by env faults are re-run on another env, then recorded as `env_failure`: they never
enter a group (never a policy failure) and the run's report counts them. Resumable: the checkpoint
side state holds the curriculum, FCF, AdaPR buffer and the cumulative rollout report; task
sampling and rollout seeds derive from (seed, iteration) so a resumed run repeats an uninterrupted
one in sync mode.
"""
from __future__ import annotations

import functools
import os
import shutil
import threading
import time
from typing import Callable, Optional, Sequence

import numpy as np
from absl import logging

from gui_jax.envs.pool import EnvPool
from gui_jax.rl.adagrpo import FailureCurriculum
from gui_jax.rl.advantages import get_group_advantage
from gui_jax.rl.losses import get_policy_loss
from gui_jax.rl.prompting import PromptConfig
from gui_jax.rl.rollout import RolloutConfig, RolloutEngine, rollout_report
from gui_jax.tasks.curriculum import Curriculum
from gui_jax.train.online.builtin_algorithms import get_algorithm
from gui_jax.train.online.config import needs_reward_model, validate_online
from gui_jax.train.online.ppo import critic_dir
from gui_jax.train.online.rewards import apply_rewards
from gui_jax.train.online.selection import Traj, group_advantages, sample_tasks, step_samples
from gui_jax.train.rl_common import RLRun

REPORT_KEYS = ("episodes", "completed", "env_failure", "retried", "failed_attempts", "stale_restarts",
               "successes", "env_steps")


# ------------------------------------------------------------------------------------------- envs
def make_env_factory(env_cfg, *, render: bool, max_steps: int) -> Callable[[int], object]:
    """slot -> env of `env.backend` (gui_jax/envs/factory.py: the one backend table)."""
    from gui_jax.envs import factory
    return factory.make_env_factory(env_cfg, render=render, max_steps=max_steps)


def make_pool(env_cfg, make_env: Callable[[int], object]) -> EnvPool:
    from gui_jax.envs import factory
    return factory.make_pool(env_cfg, make_env)


def rollout_config(cfg, iteration: int) -> RolloutConfig:
    return RolloutConfig(mode=cfg.rollout_mode, max_steps=cfg.max_steps, temperature=cfg.temperature,
                         batch_cap=cfg.batch_cap, max_wait_s=cfg.max_wait_s, max_staleness=cfg.get("max_staleness"),
                         max_episode_retries=cfg.max_episode_retries,
                         policy_timeout_s=float(cfg.get("policy_timeout_s", 600.0)),
                         seed=int(cfg.seed) * 1_000_003 + 7919 * int(iteration) + 1)


# ------------------------------------------------------------------------------------------- the run
class OnlineRun(RLRun):
    """RLRun + the online trainers' side state (curriculum, FCF, the algorithm's replay buffer, rollout
    report, critic), with the registered algorithm's policy loss."""

    def __init__(self, agent, tasks: Sequence, cfg, *, workdir: str, ref_params=None, prefix: str = "online",
                 logger=None, critic=None):
        validate_online(cfg)
        self.workdir = workdir
        self.algorithm = get_algorithm(cfg.algorithm)
        super().__init__(agent, len(tasks), cfg, workdir=workdir, ref_params=ref_params, prefix=prefix,
                         logger=logger, policy_loss=get_policy_loss(self.algorithm.policy_loss))
        self.curriculum = (Curriculum(switch_iterations=tuple(cfg.curriculum_switch_iterations),
                                      success_threshold=cfg.get("curriculum_success_threshold"))
                           if cfg.curriculum else None)
        self.fcf = (FailureCurriculum(cfg.fcf_fail_epochs, cfg.fcf_cooldown_epochs, cfg.fcf_decay,
                                      cfg.fcf_remove_after) if cfg.get("fcf") else None)
        # checkpointed under "adapr" (AdaGRPO's buffer, the only replay today) so old checkpoints resume
        self.buffer = self.algorithm.replay(cfg) if self.algorithm.replay is not None else None
        self.report = {k: 0 for k in REPORT_KEYS}
        self.critic = critic
        self._difficulty_checked = False
        side = self.restored_extra.get("online", {})
        if side:
            if self.curriculum is not None and "curriculum" in side:
                self.curriculum.load_state_dict(side["curriculum"])
            if self.fcf is not None and "fcf" in side:
                self.fcf.load_state_dict(side["fcf"])
            if self.buffer is not None and "adapr" in side:
                self.buffer.load_state_dict(side["adapr"])
            self.report.update(side.get("report", {}))
            if self.critic is not None:
                path = critic_dir(workdir, self.iteration)
                if not os.path.isdir(path):
                    raise FileNotFoundError(f"resuming {cfg.algorithm} at iteration {self.iteration}: critic "
                                            f"checkpoint {path} is missing")
                self.critic.load(path)

    def side_state(self) -> dict:
        out = {"report": dict(self.report)}
        if self.curriculum is not None:
            out["curriculum"] = self.curriculum.state_dict()
        if self.fcf is not None:
            out["fcf"] = self.fcf.state_dict()
        if self.buffer is not None:
            out["adapr"] = self.buffer.state_dict()
        return out

    def checkpoint_extra(self) -> dict:
        extra = super().checkpoint_extra()
        extra["online"] = self.side_state()
        if self.critic is not None and self._saving_now():
            path = critic_dir(self.workdir, self.iteration)
            if not os.path.isdir(path):
                self.critic.save(path)
            self._prune_critics()
        return extra

    def _saving_now(self) -> bool:
        from gui_jax.train.fit import sigterm_requested
        stop = self.cfg.get("stop_after_steps")
        return (self.ck.ckpt.should_save(self.iteration) or self.iteration >= self.cfg.iterations
                or (stop is not None and self.done_this_run >= stop) or sigterm_requested())

    def _prune_critics(self, keep: int = 4) -> None:
        root = os.path.join(self.workdir, "critic")
        its = sorted(int(d) for d in os.listdir(root) if d.isdigit()) if os.path.isdir(root) else []
        for it in its[:-keep]:
            shutil.rmtree(os.path.join(root, str(it)), ignore_errors=True)

    def task_pool(self, tasks: Sequence) -> list:
        if self.curriculum is None:
            return list(tasks)
        if not self._difficulty_checked:  # said once per run
            self._difficulty_checked = True
            missing = [t.task_id for t in tasks if getattr(t, "difficulty", None) is None]
            if missing:
                logging.warning("%s: %d of %d training tasks have no difficulty (e.g. %s); the curriculum treats "
                                "them as one level, in every stage", self.prefix, len(missing), len(tasks), missing[0])
        return self.curriculum.filter(tasks, difficulty_of=lambda t: getattr(t, "difficulty", None))


def records_to_trajs(records) -> tuple[list[Traj], dict]:
    """Completed trajectories (env_failure ones excluded) and this round's report."""
    report = rollout_report(records)
    trajs = [Traj(r.task_id, bool(r.success), list(r.steps)) for r in records if r.status == "completed"]
    return trajs, report


def _add_report(total: dict, part: dict) -> None:
    for k in REPORT_KEYS:
        total[k] = int(total.get(k, 0)) + int(part.get(k, 0))


def grpo_samples(trajs: Sequence[Traj], cfg, *, skip_zero: bool = True) -> list:
    out = []
    for t in trajs:
        if skip_zero and t.advantage == 0.0:
            continue
        out += step_samples(t, t.advantage)
    return out


def advantage_step(run: OnlineRun, trajs: list[Traj], cfg, rng: np.random.Generator, *, reward_fn=None) -> tuple[list, dict]:
    """Sets advantages and picks what this iteration trains on → (TrainSamples, metrics), through the
    registered algorithm: its `samples` hook (PPO), else its group estimator, then its `select` hook."""
    algo = get_algorithm(cfg.algorithm)
    if algo.samples is not None:
        return algo.samples(run, trajs, cfg, reward_fn=reward_fn)
    metrics: dict = {}
    adv = group_advantages(trajs, get_group_advantage(algo.advantage_name(cfg)), cfg)
    for t, a in zip(trajs, adv):
        t.advantage = float(a)
    chosen = trajs
    if algo.select is not None:
        chosen, selected = algo.select(run, trajs, cfg, rng)
        metrics.update(selected)
    metrics["trained_trajectories"] = sum(t.advantage != 0.0 for t in chosen)
    return grpo_samples(chosen, cfg, skip_zero=cfg.get("skip_zero_advantage", True)), metrics


def train_online(agent, tasks: Sequence, pcfg: PromptConfig, cfg, *, workdir: str, env_cfg=None,
                 make_env: Optional[Callable[[int], object]] = None, pool: Optional[EnvPool] = None,
                 logger=None, prefix: str = "online", ref_params=None, policy=None,
                 reward_fn: Optional[Callable] = None, prompt_fn=None, parse_fn=None,
                 critic_params=None, on_iteration: Optional[Callable] = None, reward_model=None) -> dict:
    """Trains agent.params in place (resumable from `workdir`); cfg = the `online` block.

    tasks: the training tasks (each with .task_id, .goal, .difficulty). Envs: `pool`, else
    `make_env(slot)`, else from `env_cfg` (PhoneSim in process, RemoteEnv with env.server_urls).
    policy: the behaviour policy for rollouts (default agent.policy; its generations must carry the
    agent's token ids). reward_fn(trajectory, t) -> float: PPO's per-step reward hook.
    reward_model: a trajectory reward model (`online/rewards.py` `RMTrajectoryScorer` or an object with
    outcome_scores / step_scores), needed by online.reward = rm, step_reward = prm, critic_init = rm.
    rollout_mode sync: lock-step, one engine per iteration (deterministic). async: one engine for the
    whole run, trains on the first `episodes_per_iteration` complete groups (see `_AsyncStream`).
    Returns {iterations, optimizer_steps, rollout_report (cumulative, every episode accounted for)}
    (+ "async": {submitted, dropped_stale, abandoned} episodes in async mode).
    """
    validate_online(cfg)
    if not tasks:
        raise ValueError("train_online needs at least one training task")
    if needs_reward_model(cfg) and reward_model is None:
        raise ValueError(f"online.reward = {cfg.get('reward')!r}, online.step_reward = {cfg.get('step_reward')!r}, "
                         f"online.critic_init = {cfg.get('critic_init')!r} need a trained reward model: set "
                         f"online.rm_checkpoint_dir (the online_rl job loads it) or pass reward_model=")
    algo = get_algorithm(cfg.algorithm)
    critic = (algo.make_critic(agent, cfg, params=critic_params, reward_model=reward_model)
              if algo.make_critic is not None else None)
    run = OnlineRun(agent, tasks, cfg, workdir=workdir, ref_params=ref_params, prefix=prefix, logger=logger,
                    critic=critic)
    own_pool = pool is None
    if pool is None:
        env_cfg = env_cfg if env_cfg is not None else _default_env()
        render = pcfg.observation in ("screenshot", "both")
        pool = make_pool(env_cfg, make_env or make_env_factory(env_cfg, render=render, max_steps=cfg.max_steps))
    behaviour = policy if policy is not None else agent.policy
    train = functools.partial(_train_iteration, run, cfg=cfg, reward_fn=reward_fn, reward_model=reward_model,
                              on_iteration=on_iteration)
    stream = None
    try:
        if cfg.rollout_mode == "async":
            stream = _AsyncStream(run, tasks, behaviour, pool, pcfg, cfg, prompt_fn=prompt_fn, parse_fn=parse_fn)
            while run.running:
                records, extra = stream.take()
                train(records, update=stream.update, extra=extra)
        else:
            while run.running:
                it = run.iteration
                chosen = _sample_iteration_tasks(run, tasks, cfg, np.random.default_rng([int(cfg.seed), it]), prefix)
                t0 = time.monotonic()
                with RolloutEngine(behaviour, pool, pcfg, rollout_config(cfg, it), prompt_fn=prompt_fn,
                                   parse_fn=parse_fn) as engine:
                    engine.set_policy(version=it)
                    records = engine.run(chosen, trials=cfg.num_rollouts)
                train(records, extra={"rollout_seconds": time.monotonic() - t0})
        summary = run.close()
    finally:
        if stream is not None:
            stream.close()
        if own_pool:
            pool.close()
    summary["rollout_report"] = dict(run.report)
    if stream is not None:
        summary["async"] = stream.accounting()
    logging.info("%s: %s", prefix, summary)
    return summary


def _sample_iteration_tasks(run: OnlineRun, tasks: Sequence, cfg, rng: np.random.Generator, prefix: str) -> list:
    chosen = sample_tasks(run.task_pool(tasks), cfg.episodes_per_iteration, rng, run.fcf)
    if not chosen:
        raise RuntimeError(f"{prefix}: no training task left at iteration {run.iteration} (curriculum stage "
                           f"{getattr(run.curriculum, 'stage', None)}, FCF removed "
                           f"{len(run.fcf.removed) if run.fcf else 0})")
    return chosen


def _train_iteration(run: OnlineRun, records, *, cfg, reward_fn, reward_model, on_iteration,
                     update: Optional[Callable] = None, extra: Optional[dict] = None) -> None:
    """One iteration on finished rollout records: report, rewards (rule / RM / dense), FCF, advantages,
    curriculum, the update (`update(samples)`, default run.update), the hook, logging and checkpoint."""
    it = run.iteration
    trajs, rep = records_to_trajs(records)
    _add_report(run.report, rep)
    completed = [r for r in records if r.status == "completed"]
    # seconds per phase (wall, this process): where an iteration's time goes, e.g. PPO's critic against GRPO
    t0 = time.monotonic()
    step_fn, reward_metrics = apply_rewards(completed, trajs, cfg, reward_model, reward_fn)
    t1 = time.monotonic()
    if run.fcf is not None:
        by_task: dict = {}
        for t in trajs:
            by_task.setdefault(t.task_id, []).append(t.reward)
        run.fcf.record_epoch(by_task)
    samples, metrics = advantage_step(run, trajs, cfg, np.random.default_rng([int(cfg.seed), it, 1]),
                                      reward_fn=step_fn)
    t2 = time.monotonic()
    # the trained reward (the RM's when online.reward = rm) drives the curriculum, as it would without a rule
    success = float(np.mean([t.success for t in trajs])) if trajs else 0.0
    metrics.update(reward_metrics)
    metrics.update(extra or {})
    metrics.update({"reward_mean": success, "episodes": rep["episodes"],
                    "completed": rep["completed"], "env_failure": rep["env_failure"],
                    "retried": rep["retried"], "mean_steps": float(np.mean([len(t.steps) for t in trajs]))
                    if trajs else 0.0, "train_steps": len(samples)})
    if run.curriculum is not None:
        metrics["curriculum_stage"] = run.curriculum.update(it + 1, success)
    if run.fcf is not None:
        metrics["fcf_removed"] = len(run.fcf.removed)
    metrics.update((update or run.update)(samples))
    metrics.update({"reward_seconds": t1 - t0, "advantage_seconds": t2 - t1, "update_seconds": time.monotonic() - t2})
    if on_iteration is not None:
        on_iteration(run, trajs, metrics)
    run.end_iteration(metrics)


# ------------------------------------------------------------------------------------------- async streaming
class _SerialPolicy:
    """The behaviour policy behind a lock the trainer holds while it updates: the update donates the
    params the sampler reads, so no generate call may run across it (env steps go on meanwhile)."""

    def __init__(self, policy, lock: threading.Lock):
        self.policy, self.lock = policy, lock

    def generate(self, prompts, **kw):
        with self.lock:
            return self.policy.generate(prompts, **kw)

    def __getattr__(self, name):
        return getattr(self.policy, name)


class _AsyncStream:
    """Streaming asynchronous training (AWG §3.3) over one `RolloutEngine` kept open for the whole run.

    Keeps `2·episodes_per_iteration` groups in flight (this iteration's and the next one's; never more than
    the run's remaining iterations need), takes groups from `engine.groups()` in order of completion and
    hands the trainer the first `episodes_per_iteration` complete ones; after each update the engine's
    policy version becomes the new iteration. Staleness (lag = trained version − behaviour version of a
    group's first step): the engine restarts episodes that fall more than `max_staleness` behind while
    running or waiting for delivery; a complete group whose earliest member is still too old when taken
    (its early trials were delivered before later updates) is dropped and its task resubmitted. Dropped
    episodes count in the report's `stale_restarts`; episodes still running when the run stops early
    (preemption) are abandoned and counted in `accounting()`; a resumed run starts a fresh engine."""

    def __init__(self, run: OnlineRun, tasks, behaviour, pool, pcfg, cfg, *, prompt_fn, parse_fn):
        self.run, self.tasks, self.cfg = run, tasks, cfg
        self.lock = threading.Lock()
        self.engine = RolloutEngine(_SerialPolicy(behaviour, self.lock), pool, pcfg, rollout_config(cfg, run.iteration),
                                    prompt_fn=prompt_fn, parse_fn=parse_fn)
        self.engine.set_policy(version=run.iteration)
        self.outstanding = 0          # groups submitted and not yet taken (in flight or waiting in the engine)
        self.batches = 0
        self.counts = {"submitted": 0, "dropped_stale": 0}
        self.episodes_before = int(run.report.get("episodes", 0))  # the report is cumulative over resumes
        self._groups = None

    def _remaining_groups(self, taken_now: int) -> int:
        left = self.cfg.iterations - self.run.iteration
        stop = self.cfg.get("stop_after_steps")
        if stop is not None:
            left = min(left, int(stop) - self.run.done_this_run)
        return max(left, 0) * self.cfg.episodes_per_iteration - taken_now

    def _submit(self, tasks_: list) -> None:
        self.engine.submit(tasks_, trials=self.cfg.num_rollouts)
        self.outstanding += len(tasks_)
        self.counts["submitted"] += len(tasks_) * self.cfg.num_rollouts

    def _top_up(self, taken_now: int) -> None:
        e = self.cfg.episodes_per_iteration
        want = min(2 * e, self._remaining_groups(taken_now))
        while self.outstanding < want:
            rng = np.random.default_rng([int(self.cfg.seed), 1 + self.run.iteration, 7919, self.batches])
            self.batches += 1
            chosen = _sample_iteration_tasks(self.run, self.tasks, self.cfg, rng, self.run.prefix)
            self._submit(chosen[: want - self.outstanding])

    def _next_group(self) -> list:
        while True:
            if self._groups is None:
                self._groups = self.engine.groups()
            group = next(self._groups, None)
            if group is not None:
                return group
            self._groups = None  # everything submitted so far was delivered
            if self.outstanding <= 0:
                raise RuntimeError(f"{self.run.prefix}: async rollouts ran dry at iteration {self.run.iteration}")

    def take(self) -> tuple[list, dict]:
        """The next iteration's records (its first complete groups) and its streaming metrics."""
        e, k = self.cfg.episodes_per_iteration, self.cfg.get("max_staleness")
        version = self.run.iteration
        t0 = time.monotonic()
        groups, lags = [], []
        self._top_up(0)
        while len(groups) < e:
            group = self._next_group()
            self.outstanding -= 1
            lag = version - min(r.policy_version for r in group)
            if k is not None and lag > k:
                self.counts["dropped_stale"] += len(group)
                self.run.report["stale_restarts"] = int(self.run.report.get("stale_restarts", 0)) + len(group)
                self._submit([group[0].task])
                continue
            groups.append(group)
            lags.append(lag)
            self._top_up(len(groups))
        waited = time.monotonic() - t0
        records = [r for g in groups for r in g]
        return records, {"policy_lag_mean": float(np.mean(lags)), "policy_lag_max": int(max(lags)),
                         "waited_s": waited, "groups_in_flight": self.outstanding}

    def update(self, samples) -> dict:
        """The trainer's update with generation paused; then rollouts continue under the new version."""
        with self.lock:
            metrics = self.run.update(samples)
            self.engine.set_policy(version=self.run.iteration + 1)
        return metrics

    def accounting(self) -> dict:
        out = dict(self.counts)
        delivered = int(self.run.report.get("episodes", 0)) - self.episodes_before
        out["abandoned"] = self.counts["submitted"] - delivered - self.counts["dropped_stale"]
        return out

    def close(self) -> None:
        self.engine.close()


def _default_env():
    from gui_jax.train.online.config import env_block
    return env_block()
