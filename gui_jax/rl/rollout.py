"""Online rollouts over an `EnvPool`: asynchronous first-come-first-serve, or lock-step synchronous.

    engine = RolloutEngine(policy, pool, PromptConfig(...), RolloutConfig(mode="async", max_staleness=1))
    engine.submit(tasks, trials=8)                 # one group of 8 trajectories per task
    for group in engine.groups():                  # the first complete groups, as they finish
        train_on(group); engine.set_policy(version=engine.policy_version + 1)
    engine.close()

Async (AWG §3.3, first-come-first-serve): each of the pool's `n_active` envs advances on its own
worker thread. A worker that needs an action queues its prompt; one batcher thread coalesces
queued prompts into `policy.generate` calls (at most `batch_cap` prompts; it waits at most
`max_wait_s` after the first, and not at all once every live episode is waiting). Finished
trajectories stream out as they complete, so a trainer can start on the first complete groups
while stragglers are still running.

Sync (lock-step, deterministic): episodes run in waves of `n_active`; at each step every live
episode of the wave gets its action from one batched `generate` call and all envs step in parallel,
then everyone waits for the slowest env. Same record format; used as the baseline and in tests.

Staleness: every step records the policy version of the `generate` call that produced it (and the
behaviour logprobs in its `Generation`). With `max_staleness = k`, a trajectory whose first step is
more than k policy updates behind the engine's current version is discarded and its episode
re-run from scratch (counted as `stale_restarts`): checked before every policy request and again
before delivery.

Faults: an `EnvFailure` (crash, hang past the call timeout, lost connection) ends the attempt; the
episode is re-run from scratch on another env up to `max_episode_retries` times, then delivered with
status `env_failure` (never dropped, never a policy failure: trainers keep only `completed`).
Every wait is bounded: env calls and leases by the pool's timeouts, policy answers by
`policy_timeout_s`, the next finished trajectory by `result_timeout_s`.
"""
from __future__ import annotations

import collections
import dataclasses
import queue
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, Iterator, Optional, Sequence

from gui_jax.core.dialects import ActionParseError, parse_response, scale_action_to_screen
from gui_jax.core.types import Action, Observation
from gui_jax.envs.base import EnvFailure
from gui_jax.envs.pool import EnvLease, EnvPool
from gui_jax.rl.policy import Generation, Policy, Prompt
from gui_jax.rl.prompting import PromptConfig, build_messages

ROLLOUT_MODES = ("async", "sync")


@dataclasses.dataclass
class RolloutConfig:
    mode: str = "async"                   # async | sync (lock-step)
    max_steps: int = 15                   # agent steps per episode (an unparsable response still counts)
    temperature: float = 1.0
    max_new_tokens: Optional[int] = None
    batch_cap: int = 16                   # most prompts per policy.generate call
    max_wait_s: float = 0.005             # async: coalescing window after the first queued prompt
    max_staleness: Optional[int] = 1      # policy updates a trajectory may lag; None = unbounded
    max_episode_retries: int = 2          # re-runs after env failures before status env_failure
    policy_timeout_s: float = 600.0       # bound on waiting for one generate answer
    result_timeout_s: float = 3600.0      # bound on waiting for the next finished trajectory
    seed: int = 0

    def __post_init__(self):
        if self.mode not in ROLLOUT_MODES:
            raise ValueError(f"unknown rollout mode {self.mode!r}; known: {ROLLOUT_MODES}")
        if self.batch_cap < 1 or self.max_steps < 1:
            raise ValueError(f"batch_cap and max_steps must be >= 1, got {self.batch_cap}, {self.max_steps}")
        if self.max_staleness is not None and self.max_staleness < 0:
            raise ValueError(f"max_staleness must be >= 0 or None, got {self.max_staleness}")


@dataclasses.dataclass
class StepRecord:
    observation: Observation              # what the policy saw
    response: str                         # the policy's text
    generation: Generation                # prompt/response token ids + behaviour logprobs (log π_old)
    action: Optional[Action]              # None when the response did not parse (a wasted step)
    info: dict                            # the env's info (or {"valid": False, "reason": ...} if unparsable)
    policy_version: int                   # version of the generate call that produced the response
    prompt: Optional[Prompt] = None       # (messages, images) as sent to the policy

    @property
    def prompt_ids(self):
        return self.generation.prompt_ids

    @property
    def response_ids(self):
        return self.generation.response_ids

    @property
    def logprobs(self):
        return self.generation.logprobs


@dataclasses.dataclass
class TrajectoryRecord:
    task: Any                             # the EnvTask
    group_id: str                         # task id: GRPO groups are keyed by it
    trial: int                            # index within the group
    steps: list[StepRecord]               # of the last attempt (partial when status is env_failure)
    success: bool
    status: str                           # completed | env_failure
    retries: int                          # attempts lost to env failures before the last one
    policy_version: int                   # oldest version among the steps (current version if none)
    round: int = 0                        # which submit() call queued it
    index: int = 0                        # position within that submit() call
    truncated: bool = False               # hit max_steps without the env ending the episode
    errors: list = dataclasses.field(default_factory=list)
    env_slots: list = dataclasses.field(default_factory=list)
    stale_restarts: int = 0
    wall_s: float = 0.0
    final_observation: Optional[Observation] = None  # the screen after the last step (outcome reward models)

    @property
    def task_id(self) -> str:
        return self.task.task_id


class RolloutError(RuntimeError):
    """The rollout cannot go on (the policy failed or timed out, or a worker hit a bug)."""


class _Stale(Exception):
    """Internal: the episode's first step is too many policy versions old; re-run it."""


class _Aborted(Exception):
    """Internal: the engine was closed mid-episode."""


@dataclasses.dataclass
class _Job:
    task: Any
    trial: int
    group_id: str
    round: int
    index: int
    retries: int = 0
    stale_restarts: int = 0
    errors: list = dataclasses.field(default_factory=list)
    slots: list = dataclasses.field(default_factory=list)


class _Episode:
    """One attempt of one episode: prompt building, response parsing, step bookkeeping."""

    def __init__(self, job: _Job, prompt_fn, parse_fn, max_steps: int):
        self.job, self.prompt_fn, self.parse_fn, self.max_steps = job, prompt_fn, parse_fn, max_steps
        self.steps: list[StepRecord] = []
        self.history: list[tuple[Observation, str]] = []
        self.obs: Optional[Observation] = None
        self.done = self.success = self.truncated = False
        self.prompt_now: Optional[Prompt] = None
        self.t0 = time.monotonic()

    @property
    def first_version(self) -> Optional[int]:
        return self.steps[0].policy_version if self.steps else None

    def prompt(self) -> Prompt:
        self.prompt_now = self.prompt_fn(self.job.task, self.history, self.obs)
        return self.prompt_now

    def decide(self, gen: Generation) -> tuple[Optional[Action], str]:
        try:
            return self.parse_fn(gen.text, self.obs), ""
        except ActionParseError as e:
            return None, str(e)

    def record(self, gen: Generation, version: int, action: Optional[Action], result, parse_error: str) -> None:
        if action is None:
            obs2, done, info = self.obs, False, {"valid": False, "reason": f"unparsable response: {parse_error}"[:300]}
        else:
            obs2, done, info = result
        self.steps.append(StepRecord(self.obs, gen.text, gen, action, info, version, self.prompt_now))
        self.history.append((self.obs, gen.text))
        self.obs = obs2
        if done:
            self.done, self.success = True, bool(info.get("success", False))
        elif len(self.steps) >= self.max_steps:
            self.done, self.truncated = True, True

    def to_record(self, status: str, version_now: int) -> TrajectoryRecord:
        j = self.job
        versions = [s.policy_version for s in self.steps]
        return TrajectoryRecord(j.task, j.group_id, j.trial, self.steps, bool(self.success and status == "completed"),
                                status, j.retries, min(versions) if versions else version_now, j.round, j.index,
                                self.truncated, list(j.errors), list(j.slots), j.stale_restarts,
                                time.monotonic() - self.t0, self.obs)


def default_parse_fn(pcfg: PromptConfig) -> Callable[[str, Observation], Action]:
    """Response text -> Action in screen pixels (coordinates are screenshot pixels when the prompt has one)."""
    with_image = pcfg.observation in ("screenshot", "both")

    def parse(text: str, obs: Observation) -> Action:
        _, action = parse_response(text, pcfg.dialect)
        if with_image and action.x is not None:
            image_size = (obs.screenshot.shape[1], obs.screenshot.shape[0])
            action = scale_action_to_screen(action, image_size, obs.screen_size)
        return action
    return parse


class RolloutEngine:
    """See module docstring. `prompt_fn(task, history, obs) -> Prompt` and `parse_fn(text, obs) -> Action`
    default to `build_messages` and the dialect parser of `pcfg`."""

    def __init__(self, policy: Policy, pool: EnvPool, pcfg: Optional[PromptConfig] = None,
                 cfg: Optional[RolloutConfig] = None, *, prompt_fn: Optional[Callable] = None,
                 parse_fn: Optional[Callable] = None):
        self.policy, self.pool = policy, pool
        self.pcfg, self.cfg = pcfg or PromptConfig(), cfg or RolloutConfig()
        self.prompt_fn = prompt_fn or (lambda task, history, obs: build_messages(task.goal, history, obs, self.pcfg))
        self.parse_fn = parse_fn or default_parse_fn(self.pcfg)
        self.policy_version = 0
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._jobs: collections.deque[_Job] = collections.deque()
        self._jobs_cv = threading.Condition(self._lock)
        self._out: queue.Queue = queue.Queue()
        self._requests: queue.Queue = queue.Queue()
        self._undelivered = 0
        self._rounds = 0
        self._group_sizes: dict[tuple[int, str], int] = {}
        self._threads: list[threading.Thread] = []
        self._in_episode = 0
        self._generate_calls = 0
        self._counters = collections.Counter()

    # ---- control ---------------------------------------------------------------------------------
    def set_policy(self, policy: Optional[Policy] = None, version: Optional[int] = None) -> int:
        """Swap in new weights (or a new policy object) and advance the version (default +1)."""
        with self._lock:
            if policy is not None:
                self.policy = policy
            self.policy_version = self.policy_version + 1 if version is None else int(version)
            return self.policy_version

    def submit(self, tasks: Sequence[Any], trials: int = 1, group_ids: Optional[Sequence[str]] = None) -> int:
        """Queue `trials` episodes of each task (one group per task); returns the round number."""
        if trials < 1:
            raise ValueError(f"trials must be >= 1, got {trials}")
        with self._lock:
            rnd = self._rounds
            self._rounds += 1
            for i, task in enumerate(tasks):
                gid = group_ids[i] if group_ids is not None else task.task_id
                self._group_sizes[(rnd, gid)] = self._group_sizes.get((rnd, gid), 0) + trials
                for k in range(trials):
                    self._jobs.append(_Job(task, k, gid, rnd, i * trials + k))
                    self._undelivered += 1
            self._counters["submitted"] += len(tasks) * trials
            self._jobs_cv.notify_all()
        if self.cfg.mode == "async":
            self._start_threads()
        return rnd

    def run(self, tasks: Sequence[Any], trials: int = 1) -> list[TrajectoryRecord]:
        """Submit and collect everything (in submission order)."""
        self.submit(tasks, trials)
        return sorted(self.results(), key=lambda r: (r.round, r.index))

    def stats(self) -> dict:
        with self._lock:
            out = dict(self._counters)
            out["generate_calls"] = self._generate_calls
            out["policy_version"] = self.policy_version
        reqs = out.get("policy_requests", 0)
        out["mean_batch"] = reqs / max(out["generate_calls"], 1)
        out["pool"] = self.pool.stats()
        return out

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop: no new episodes start, running ones stop at their next step (bounded wait)."""
        self._closed.set()
        with self._lock:
            self._jobs_cv.notify_all()
        deadline = time.monotonic() + timeout_s
        for t in self._threads:
            t.join(timeout=max(deadline - time.monotonic(), 0.0))

    def __enter__(self) -> "RolloutEngine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- delivery --------------------------------------------------------------------------------
    def _too_stale(self, first_version: Optional[int]) -> bool:
        k = self.cfg.max_staleness
        return k is not None and first_version is not None and self.policy_version - first_version > k

    def results(self) -> Iterator[TrajectoryRecord]:
        """Finished trajectories as they complete, until every submitted episode is delivered."""
        if self.cfg.mode == "sync":
            yield from self._sync_results()
            return
        while True:
            with self._lock:
                if self._undelivered == 0:
                    return
            deadline = time.monotonic() + self.cfg.result_timeout_s
            while True:
                try:
                    item = self._out.get(timeout=min(max(deadline - time.monotonic(), 0.0), 0.5))
                    break
                except queue.Empty:
                    if self._closed.is_set():
                        return  # closed: episodes still running were abandoned
                    if time.monotonic() >= deadline:
                        raise RolloutError(f"no trajectory finished within {self.cfg.result_timeout_s}s "
                                           f"({self._undelivered} outstanding)") from None
            if isinstance(item, BaseException):
                raise RolloutError(f"rollout worker failed: {type(item).__name__}: {item}") from item
            job, rec = item
            if rec.status == "completed" and self._too_stale(rec.policy_version):
                self._requeue_stale(job)
                continue
            with self._lock:
                self._undelivered -= 1
                self._counters[rec.status] += 1
                self._counters["successes"] += rec.success
            yield rec

    def groups(self) -> Iterator[list[TrajectoryRecord]]:
        """Complete groups (all trials of one task in one round), in order of completion."""
        buf: dict[tuple[int, str], list[TrajectoryRecord]] = collections.defaultdict(list)
        for rec in self.results():
            key = (rec.round, rec.group_id)
            buf[key].append(rec)
            if len(buf[key]) == self._group_sizes[key]:
                yield sorted(buf.pop(key), key=lambda r: r.trial)

    def _requeue_stale(self, job: _Job, front: bool = False) -> None:
        job.stale_restarts += 1
        with self._lock:
            self._counters["stale_restarts"] += 1
            (self._jobs.appendleft if front else self._jobs.append)(job)
            self._jobs_cv.notify_all()

    # ---- async machinery -------------------------------------------------------------------------
    def _start_threads(self) -> None:
        with self._lock:
            if self._threads:
                return
            names = ["rollout-batcher"] + [f"rollout-worker-{i}" for i in range(self.pool.n_active)]
            targets = [self._batcher] + [self._worker] * self.pool.n_active
            self._threads = [threading.Thread(target=t, name=n, daemon=True) for t, n in zip(targets, names)]
        for t in self._threads:
            t.start()

    def _next_job(self) -> Optional[_Job]:
        with self._jobs_cv:
            while not self._jobs:
                if self._closed.is_set():
                    return None
                self._jobs_cv.wait(0.25)
            return self._jobs.popleft()

    def _worker(self) -> None:
        while not self._closed.is_set():
            job = self._next_job()
            if job is None:
                return
            try:
                self._out.put((job, self._run_job(job)))
            except _Stale:
                self._requeue_stale(job, front=True)
            except _Aborted:
                return
            except BaseException as e:  # a bug or a policy failure: surface it to the consumer
                self._out.put(e)
                return

    def _run_job(self, job: _Job) -> TrajectoryRecord:
        last: list[_Episode] = []

        def attempt(lease: EnvLease) -> _Episode:
            ep = _Episode(job, self.prompt_fn, self.parse_fn, self.cfg.max_steps)
            last[:] = [ep]
            ep.obs = lease.reset(job.task)
            with self._lock:
                self._in_episode += 1
            try:
                while not ep.done:
                    if self._closed.is_set():
                        raise _Aborted()
                    if self._too_stale(ep.first_version):
                        raise _Stale()
                    gen, version = self._ask_policy(ep.prompt())
                    action, err = ep.decide(gen)
                    result = lease.step(action) if action is not None else None
                    ep.record(gen, version, action, result, err)
                    with self._lock:
                        self._counters["env_steps"] += action is not None
                        self._counters["unparsable"] += action is None
            finally:
                with self._lock:
                    self._in_episode -= 1
            return ep

        # errors/slots fill in place, so attempts lost before a stale restart stay counted
        n_err = len(job.errors)
        res = self.pool.run_with_failover(attempt, max(self.cfg.max_episode_retries - n_err, 0),
                                          errors=job.errors, slots=job.slots)
        with self._lock:
            self._counters["failed_attempts"] += len(job.errors) - n_err
        if res.status == "completed":
            job.retries = len(job.errors)
            return res.value.to_record("completed", self.policy_version)
        job.retries = len(job.errors) - 1
        ep = last[0] if last else _Episode(job, self.prompt_fn, self.parse_fn, self.cfg.max_steps)
        return ep.to_record("env_failure", self.policy_version)

    def _ask_policy(self, prompt: Prompt) -> tuple[Generation, int]:
        fut: Future = Future()
        self._requests.put((prompt, fut))
        try:
            return fut.result(timeout=self.cfg.policy_timeout_s)
        except FutureTimeout:
            raise RolloutError(f"policy did not answer within {self.cfg.policy_timeout_s}s") from None

    def _batcher(self) -> None:
        cfg = self.cfg
        while not self._closed.is_set():
            try:
                batch = [self._requests.get(timeout=0.25)]
            except queue.Empty:
                continue
            deadline = time.monotonic() + cfg.max_wait_s
            while len(batch) < cfg.batch_cap:
                with self._lock:
                    everyone_waiting = len(batch) >= self._in_episode
                left = deadline - time.monotonic()
                if everyone_waiting or left <= 0:
                    # drain what is already queued without waiting
                    try:
                        while len(batch) < cfg.batch_cap:
                            batch.append(self._requests.get_nowait())
                    except queue.Empty:
                        pass
                    break
                try:
                    batch.append(self._requests.get(timeout=min(left, 0.001)))
                except queue.Empty:
                    continue
            self._generate(batch)

    def _generate(self, batch: list) -> None:
        with self._lock:
            policy, version, call = self.policy, self.policy_version, self._generate_calls
            self._generate_calls += 1
            self._counters["policy_requests"] += len(batch)
            self._counters["max_batch"] = max(self._counters["max_batch"], len(batch))
        try:
            gens = policy.generate([p for p, _ in batch], temperature=self.cfg.temperature,
                                   seed=self.cfg.seed * 1_000_003 + call, max_new_tokens=self.cfg.max_new_tokens)
            if len(gens) != len(batch):
                raise RolloutError(f"policy.generate returned {len(gens)} generations for {len(batch)} prompts")
        except BaseException as e:
            for _, fut in batch:
                fut.set_exception(e)
            return
        for (_, fut), g in zip(batch, gens):
            fut.set_result((g, version))

    # ---- lock-step synchronous mode --------------------------------------------------------------
    def _sync_results(self) -> Iterator[TrajectoryRecord]:
        cfg = self.cfg
        while not self._closed.is_set():
            with self._lock:
                if not self._jobs:
                    return
                wave = [self._jobs.popleft() for _ in range(min(self.pool.n_active, len(self._jobs)))]
            done: list[tuple[_Job, TrajectoryRecord]] = []
            retry: list[_Job] = []
            for job, ep, failure in self._run_wave(wave):
                if failure is None:
                    done.append((job, ep.to_record("completed", self.policy_version)))
                    continue
                job.errors.append(failure)
                with self._lock:
                    self._counters["failed_attempts"] += 1
                if job.retries < cfg.max_episode_retries:
                    job.retries += 1
                    retry.append(job)
                else:
                    done.append((job, ep.to_record("env_failure", self.policy_version)))
            with self._lock:
                self._jobs.extendleft(reversed(retry))  # retried episodes go first, in order
            for job, rec in done:
                if rec.status == "completed" and self._too_stale(rec.policy_version):
                    self._requeue_stale(job, front=True)
                    continue
                with self._lock:
                    self._undelivered -= 1
                    self._counters[rec.status] += 1
                    self._counters["successes"] += rec.success
                yield rec

    def _run_wave(self, wave: list[_Job]) -> list[tuple[_Job, _Episode, Optional[str]]]:
        eps = [_Episode(job, self.prompt_fn, self.parse_fn, self.cfg.max_steps) for job in wave]
        failed: dict[int, str] = {}
        leases: list[Optional[EnvLease]] = []
        for i, job in enumerate(wave):
            try:
                leases.append(self.pool.lease())
                job.slots.append(leases[-1].slot)
            except EnvFailure as e:
                leases.append(None)
                failed[i] = f"lease: {e}"
        try:
            pend = {i: leases[i].submit("reset", job.task) for i, job in enumerate(wave) if i not in failed}
            for i, p in pend.items():
                try:
                    eps[i].obs = p.result()
                except EnvFailure as e:
                    failed[i] = f"slot {leases[i].slot}: {type(e).__name__}: {e}"
            while True:
                live = [i for i, ep in enumerate(eps) if i not in failed and not ep.done]
                if not live:
                    break
                gens = []
                for lo in range(0, len(live), self.cfg.batch_cap):
                    chunk = live[lo:lo + self.cfg.batch_cap]
                    with self._lock:
                        policy, version, call = self.policy, self.policy_version, self._generate_calls
                        self._generate_calls += 1
                        self._counters["policy_requests"] += len(chunk)
                    out = policy.generate([eps[i].prompt() for i in chunk], temperature=self.cfg.temperature,
                                          seed=self.cfg.seed * 1_000_003 + call,
                                          max_new_tokens=self.cfg.max_new_tokens)
                    if len(out) != len(chunk):
                        raise RolloutError(f"policy.generate returned {len(out)} generations for {len(chunk)} prompts")
                    gens += [(g, version) for g in out]
                decided = [eps[i].decide(g) for i, (g, _) in zip(live, gens)]
                pend = {i: leases[i].submit("step", a) for i, (a, _) in zip(live, decided) if a is not None}
                for i, (g, version), (a, err) in zip(live, gens, decided):
                    try:
                        result = pend[i].result() if a is not None else None
                    except EnvFailure as e:
                        failed[i] = f"slot {leases[i].slot}: {type(e).__name__}: {e}"
                        continue
                    eps[i].record(g, version, a, result, err)
                    with self._lock:
                        self._counters["env_steps"] += a is not None
                        self._counters["unparsable"] += a is None
        finally:
            for lease in leases:
                if lease is not None:
                    self.pool.release(lease)
        return [(job, ep, failed.get(i)) for i, (job, ep) in enumerate(zip(wave, eps))]


def rollout_report(records: Sequence[TrajectoryRecord]) -> dict:
    """Accounting for a run's report: every episode is completed or env_failure; retried ones are
    counted separately (success rate is over completed episodes only)."""
    completed = [r for r in records if r.status == "completed"]
    return {
        "episodes": len(records),
        "completed": len(completed),
        "env_failure": sum(r.status == "env_failure" for r in records),
        "retried": sum(r.retries > 0 for r in records),
        "failed_attempts": sum(len(r.errors) for r in records),
        "stale_restarts": sum(r.stale_restarts for r in records),
        "successes": sum(r.success for r in completed),
        "success_rate": sum(r.success for r in completed) / len(completed) if completed else float("nan"),
        "env_steps": sum(s.action is not None for r in records for s in r.steps),
    }
