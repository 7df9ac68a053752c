"""EnvPool: a fleet of envs with bounded calls, health checks and failover (GUI-Shepherd style).

    pool = EnvPool(lambda slot: RemoteEnv(f"http://10.0.0.7:{8765 + slot}", token), PoolConfig(8, 8))
    with pool.lease() as env:               # a healthy env, at most n_active leased at once
        obs = env.reset(task)               # every call is bounded (reset/call timeouts)
        obs, done, info = env.step(action)
    result = pool.run_with_failover(episode_fn, max_retries=2)   # episode retried on another env

`n_active + n_standby` envs are built up front (GUI-Shepherd: 8 active + 8 standby). At most
`n_active` are in use; the rest wait warm. Every env call runs on that env's own worker thread and
the caller waits at most the call's timeout, so a hang never blocks a rollout: the env is marked
failed, a ready standby takes over the active role, and the failed env is rebuilt (`make_env(slot)`
again, then a health check) in the background and rejoins as a standby; after
`max_restart_attempts` failed rebuilds the slot is dead. An `EnvFailure` raised by the env (crash,
lost connection, 5xx) is handled the same way. Other exceptions are bugs and propagate. Envs with a
`health()` method (RemoteEnv) are also checked every `health_interval_s` while idle.

Server fleets (`ServerFleet`): env-server URLs where a `dns://name:port` entry stands for every address the
name resolves to (a Kubernetes headless Service: one per replica, docker/k8s.yaml). Slot i gets the i-th
replica; when the pool rebuilds a failed slot the name is resolved again and the slot takes a replica no other
slot uses (a replaced pod comes back under a new address).

Counters (`pool.stats()`): leases, calls, call_timeouts, env_failures, failed_leases, starts, restarts,
restart_failures, promotions, health_checks, health_failures, dead_slots and the per-state slot census.
"""
from __future__ import annotations

import dataclasses
import queue
import socket
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, Generic, Optional, Sequence, TypeVar

from gui_jax.envs.base import Env, EnvFailure

T = TypeVar("T")


class EnvCallTimeout(EnvFailure, TimeoutError):
    """An env call ran past its bound; the env is taken out of service and rebuilt."""


class PoolExhausted(EnvFailure):
    """No healthy env became free within the lease timeout (or every slot is dead)."""


class PoolClosed(RuntimeError):
    """The pool was closed while waiting on it."""


@dataclasses.dataclass
class PoolConfig:
    n_active: int = 8
    n_standby: int = 8
    call_timeout_s: float = 60.0          # bound on one step()
    reset_timeout_s: float = 120.0        # bound on one reset()
    create_timeout_s: float = 300.0       # bound on make_env(slot) + the first health check
    lease_timeout_s: float = 600.0        # bound on waiting for a free healthy env
    health_interval_s: float = 30.0       # idle envs with a health() method are checked this often (0: never)
    health_timeout_s: float = 10.0
    max_restart_attempts: int = 5         # consecutive failed rebuilds before a slot is declared dead
    restart_backoff_s: float = 1.0        # doubled after each failed rebuild
    close_timeout_s: float = 5.0

    def __post_init__(self):
        if self.n_active < 1 or self.n_standby < 0:
            raise ValueError(f"PoolConfig needs n_active >= 1 and n_standby >= 0, got {self.n_active}, "
                             f"{self.n_standby}")


class _Worker:
    """One daemon thread running calls for one env, in order. A hung call only pins this thread;
    `stop()` lets it exit once the call returns (daemon: never blocks interpreter exit)."""

    def __init__(self, name: str):
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def submit(self, fn: Callable, *args) -> Future:
        fut: Future = Future()
        self._q.put((fut, fn, args))
        return fut

    def _run(self) -> None:
        while True:
            item = self._q.get()
            if item is None:
                return
            fut, fn, args = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args))
            except BaseException as e:  # delivered to the waiting caller
                fut.set_exception(e)

    def stop(self) -> None:
        self._q.put(None)


@dataclasses.dataclass
class _Slot:
    index: int
    role: str                        # active | standby
    state: str = "starting"          # starting | ready | leased | checking | restarting | dead
    env: Any = None
    worker: Optional[_Worker] = None
    generation: int = 0              # how many times this slot's env was (re)built
    built_at: float = 0.0            # monotonic time the current env became ready


class PendingCall:
    """An env call submitted to the env's worker; `result()` waits at most until its deadline."""

    def __init__(self, lease: "EnvLease", fut: Future, what: str, timeout_s: float):
        self.lease, self.fut, self.what = lease, fut, what
        self.deadline = time.monotonic() + timeout_s
        self.timeout_s = timeout_s

    def result(self):
        try:
            return self.fut.result(timeout=max(self.deadline - time.monotonic(), 0.0))
        except FutureTimeout:
            err = EnvCallTimeout(f"env slot {self.lease.slot}: {self.what} took longer than {self.timeout_s:.2f}s")
            self.lease._fail(err, timeout=True)
            raise err from None
        except EnvFailure as e:
            self.lease._fail(e)
            raise


class EnvLease:
    """Exclusive use of one pooled env until released. Calls are bounded; after an env failure the
    lease is spoiled (further calls raise) and releasing it sends the env for a rebuild."""

    def __init__(self, pool: "EnvPool", slot: _Slot):
        self.pool, self._slot, self.slot = pool, slot, slot.index
        self.env, self._worker = slot.env, slot.worker
        self.failure: Optional[BaseException] = None
        self.released = False

    def _fail(self, err: BaseException, timeout: bool = False) -> None:
        if self.failure is None:
            self.failure = err
            self.pool._count("call_timeouts" if timeout else "env_failures")

    def submit(self, method: str, *args, timeout_s: Optional[float] = None) -> PendingCall:
        if self.released:
            raise RuntimeError(f"env slot {self.slot}: lease already released")
        if self.failure is not None:
            raise EnvFailure(f"env slot {self.slot} already failed in this lease: {self.failure}")
        cfg = self.pool.config
        if timeout_s is None:
            timeout_s = cfg.reset_timeout_s if method == "reset" else cfg.call_timeout_s
        self.pool._count("calls")
        return PendingCall(self, self._worker.submit(getattr(self.env, method), *args), method, timeout_s)

    def call(self, method: str, *args, timeout_s: Optional[float] = None):
        return self.submit(method, *args, timeout_s=timeout_s).result()

    def reset(self, task):
        return self.call("reset", task)

    def step(self, action):
        return self.call("step", action)

    def release(self) -> None:
        self.pool.release(self)

    def __enter__(self) -> "EnvLease":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if isinstance(exc, EnvFailure) and self.failure is None:
            self._fail(exc)
        self.pool.release(self)


@dataclasses.dataclass
class FailoverResult(Generic[T]):
    value: Optional[T]
    status: str                      # completed | env_failure
    retries: int                     # attempts that ended in an env failure before the last one
    errors: list[str]
    slots: list[int]                 # env slot of each attempt


class EnvPool:
    """See module docstring. `make_env(slot) -> Env` builds (and rebuilds) the env of a slot."""

    def __init__(self, make_env: Callable[[int], Env], config: Optional[PoolConfig] = None,
                 health: Optional[Callable[[Any], Any]] = None):
        self.make_env, self.config = make_env, config or PoolConfig()
        self._health = health  # default: env.health() when the env has one
        self._cond = threading.Condition()
        self._closed = threading.Event()
        self._counters = {k: 0 for k in ("leases", "calls", "call_timeouts", "env_failures", "failed_leases",
                                         "starts", "restarts", "restart_failures", "promotions",
                                         "health_checks", "health_failures", "dead_slots")}
        n = self.config.n_active + self.config.n_standby
        self._slots = [_Slot(i, "active" if i < self.config.n_active else "standby") for i in range(n)]
        for s in self._slots:
            self._spawn_rebuild(s)
        if self.config.health_interval_s > 0:
            threading.Thread(target=self._monitor, name="env-pool-health", daemon=True).start()

    # ---- bookkeeping -----------------------------------------------------------------------------
    def _count(self, key: str, n: int = 1) -> None:
        with self._cond:
            self._counters[key] += n

    def stats(self) -> dict:
        with self._cond:
            out = dict(self._counters)
            for st in ("starting", "ready", "leased", "checking", "restarting", "dead"):
                out[f"slots_{st}"] = sum(s.state == st for s in self._slots)
            out["active_role"] = sum(s.role == "active" and s.state not in ("restarting", "dead") for s in self._slots)
        return out

    @property
    def n_active(self) -> int:
        return self.config.n_active

    def wait_ready(self, n: Optional[int] = None, timeout_s: Optional[float] = None) -> int:
        """Block until `n` (default n_active) slots are ready, or the timeout; returns how many are."""
        n = self.config.n_active if n is None else n
        deadline = time.monotonic() + (self.config.create_timeout_s if timeout_s is None else timeout_s)
        with self._cond:
            while True:
                ready = sum(s.state == "ready" for s in self._slots)
                alive = sum(s.state != "dead" for s in self._slots)
                left = deadline - time.monotonic()
                if ready >= min(n, alive) or left <= 0 or self._closed.is_set():
                    return ready
                self._cond.wait(min(left, 0.5))

    # ---- leasing ---------------------------------------------------------------------------------
    def lease(self, timeout_s: Optional[float] = None) -> EnvLease:
        """A ready env in the active role (promoting a ready standby when the active set is short)."""
        deadline = time.monotonic() + (self.config.lease_timeout_s if timeout_s is None else timeout_s)
        with self._cond:
            while True:
                if self._closed.is_set():
                    raise PoolClosed("env pool is closed")
                slot = self._pick()
                if slot is not None:
                    slot.state = "leased"
                    self._counters["leases"] += 1
                    return EnvLease(self, slot)
                if all(s.state == "dead" for s in self._slots):
                    raise PoolExhausted(f"all {len(self._slots)} env slots are dead "
                                        f"(each failed {self.config.max_restart_attempts} rebuilds)")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PoolExhausted(f"no healthy env free within the lease timeout; slots: "
                                        f"{[s.state for s in self._slots]}")
                self._cond.wait(min(left, 1.0))

    def _pick(self) -> Optional[_Slot]:
        for s in self._slots:
            if s.role == "active" and s.state == "ready":
                return s
        live_active = sum(s.role == "active" and s.state not in ("restarting", "dead") for s in self._slots)
        if live_active < self.config.n_active:
            # Promote the standby that has been up longest: a just-rebuilt env replaced one that failed.
            ready = [s for s in self._slots if s.role == "standby" and s.state == "ready"]
            if ready:
                s = min(ready, key=lambda s: s.built_at)
                s.role = "active"
                self._counters["promotions"] += 1
                return s
        return None

    def release(self, lease: EnvLease) -> None:
        with self._cond:
            if lease.released:
                return
            lease.released = True
            slot = lease._slot
            if lease.failure is None and not self._closed.is_set():
                slot.state = "ready"
                self._cond.notify_all()
                return
            if lease.failure is not None:
                self._counters["failed_leases"] += 1
        if lease.failure is not None:
            self._retire(slot)

    def _retire(self, slot: _Slot) -> None:
        """Take a failed env out of the active set and rebuild it in the background."""
        with self._cond:
            slot.role, slot.state = "standby", "restarting"
            old_env, old_worker = slot.env, slot.worker
            slot.env = slot.worker = None
            self._cond.notify_all()
        if old_worker is not None:
            old_worker.stop()
        if old_env is not None:  # close in the background: a hung env may not close either
            threading.Thread(target=_quiet_close, args=(old_env,), daemon=True).start()
        self._spawn_rebuild(slot)

    def _spawn_rebuild(self, slot: _Slot) -> None:
        threading.Thread(target=self._rebuild, args=(slot,), name=f"env-pool-rebuild-{slot.index}",
                         daemon=True).start()

    def _health_fn(self, env) -> Optional[Callable[[], Any]]:
        if self._health is not None:
            return lambda: self._health(env)
        h = getattr(env, "health", None)
        return h if callable(h) else None

    def _rebuild(self, slot: _Slot) -> None:
        cfg = self.config
        for attempt in range(cfg.max_restart_attempts):
            if self._closed.is_set():
                return
            worker = _Worker(f"env-slot-{slot.index}")
            try:
                env = worker.submit(self.make_env, slot.index).result(timeout=cfg.create_timeout_s)
                check = self._health_fn(env)
                if check is not None:
                    worker.submit(check).result(timeout=cfg.health_timeout_s)
            except Exception as e:  # any failure to build is an infrastructure fault here
                worker.stop()
                self._count("restart_failures")
                self._last_rebuild_error = f"{type(e).__name__}: {e}"
                if self._closed.wait(cfg.restart_backoff_s * 2**attempt):
                    return
                continue
            with self._cond:
                if self._closed.is_set():
                    worker.stop()
                    threading.Thread(target=_quiet_close, args=(env,), daemon=True).start()
                    return
                slot.env, slot.worker, slot.state = env, worker, "ready"
                slot.built_at = time.monotonic()
                self._counters["starts" if slot.generation == 0 else "restarts"] += 1
                slot.generation += 1
                self._cond.notify_all()
            return
        with self._cond:
            slot.state = "dead"
            self._counters["dead_slots"] += 1
            self._cond.notify_all()

    def _monitor(self) -> None:
        cfg = self.config
        while not self._closed.wait(cfg.health_interval_s):
            with self._cond:
                todo = [s for s in self._slots if s.state == "ready" and self._health_fn(s.env) is not None]
                for s in todo:
                    s.state = "checking"
            for s in todo:
                self._count("health_checks")
                try:
                    s.worker.submit(self._health_fn(s.env)).result(timeout=cfg.health_timeout_s)
                except Exception:
                    self._count("health_failures")
                    self._retire(s)
                    continue
                with self._cond:
                    s.state = "ready"
                    self._cond.notify_all()

    # ---- episodes with failover ------------------------------------------------------------------
    def run_with_failover(self, episode_fn: Callable[[EnvLease], T], max_retries: int = 2,
                          lease_timeout_s: Optional[float] = None, errors: Optional[list] = None,
                          slots: Optional[list] = None) -> FailoverResult[T]:
        """Run `episode_fn(lease)` on a pooled env; on an `EnvFailure` (the env's, a call timeout, or no
        env to lease) run it again from scratch on another env, up to `max_retries` times, then report
        status `env_failure`. Never raises `EnvFailure`; other exceptions (bugs) propagate. `errors` and
        `slots` (optional lists) receive one entry per attempt as it happens."""
        errors = [] if errors is None else errors
        slots = [] if slots is None else slots
        n0 = len(errors)
        for attempt in range(max_retries + 1):
            try:
                lease = self.lease(lease_timeout_s)
            except PoolExhausted as e:
                errors.append(f"lease: {e}")
                slots.append(-1)
                continue
            slots.append(lease.slot)
            try:
                with lease:
                    value = episode_fn(lease)
                return FailoverResult(value, "completed", len(errors) - n0, errors, slots)
            except EnvFailure as e:
                errors.append(f"slot {lease.slot}: {type(e).__name__}: {e}")
        return FailoverResult(None, "env_failure", max_retries, errors, slots)

    # ---- shutdown --------------------------------------------------------------------------------
    def close(self) -> None:
        with self._cond:
            if self._closed.is_set():
                return
            self._closed.set()
            slots = [(s.env, s.worker) for s in self._slots]
            self._cond.notify_all()
        for env, worker in slots:
            if worker is not None and env is not None:
                try:
                    worker.submit(env.close).result(timeout=self.config.close_timeout_s)
                except Exception:
                    pass  # best effort: a hung env is abandoned with its daemon thread
                worker.stop()

    def __enter__(self) -> "EnvPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _quiet_close(env) -> None:
    try:
        env.close()
    except Exception:
        pass


# ---- server fleets (dns:// URLs) -----------------------------------------------------------------

def resolve_addresses(host: str, port: int) -> list[str]:
    """The IPv4/IPv6 addresses `host` resolves to: the default `ServerFleet` resolver."""
    return [info[4][0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


class ServerFleet:
    """Env-server URLs with `dns://name:port` entries expanded to one `http://address:port` per replica
    (`resolver(host, port) -> [address, ...]`; default: the system resolver). `url_for(slot)` gives a slot its
    server: the first time from the expansion made at construction, on every later call (the pool rebuilding
    the slot after a failure) from a fresh resolution, preferring a replica no other slot holds."""

    def __init__(self, urls: Sequence[str], resolver: Optional[Callable[[str, int], list]] = None):
        if not urls:
            raise ValueError("ServerFleet needs at least one server URL")
        self.urls = tuple(urls)
        self.resolver = resolver or resolve_addresses
        self.resolutions = 0
        self._lock = threading.Lock()
        self._assigned: dict[int, str] = {}
        self.replicas = self.expand()

    def expand(self) -> list[str]:
        """Every server URL, dns:// entries resolved now (EnvFailure when a name resolves to nothing)."""
        out: list[str] = []
        for url in self.urls:
            if not url.startswith("dns://"):
                out.append(url.rstrip("/"))
                continue
            host, _, port = url[len("dns://"):].rstrip("/").rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"server URL {url!r}: expected dns://name:port")
            self.resolutions += 1
            try:
                addresses = sorted(set(self.resolver(host, int(port))))  # a stable order: slot i, replica i
            except OSError as e:
                raise EnvFailure(f"{url}: {host!r} does not resolve: {type(e).__name__}: {e}") from None
            if not addresses:
                raise EnvFailure(f"{url}: {host!r} resolves to no address (no replica ready?)")
            out += [f"http://[{a}]:{port}" if ":" in a else f"http://{a}:{port}" for a in addresses]
        return out

    def __len__(self) -> int:
        return len(self.replicas)

    def url_for(self, slot: int) -> str:
        with self._lock:
            if slot in self._assigned:  # a rebuild: the old server failed, look again
                self.replicas = self.expand()
                taken = {u for s, u in self._assigned.items() if s != slot}
                free = [u for u in self.replicas if u not in taken]
                url = free[0] if free else self.replicas[slot % len(self.replicas)]
            else:
                url = self.replicas[slot % len(self.replicas)]
            self._assigned[slot] = url
            return url
