"""Envs, tasks and the env pool from the `env` config block: the one place `env.backend` is dispatched.

    make_env = make_env_factory(config.env, render=True, max_steps=15)   # slot -> env
    pool = make_pool(config.env, make_env)                                # EnvPool sized for the backend
    tasks = backend_tasks(config.env, config.env.seeds)                   # None: the job's PhoneSim split
    check_reachable(config.env)                                          # one-line RunError if not

Backends (declared with their fields in gui_jax/train/online/config.py `ENV`):
  phonesim      in-process PhoneSim (`resolution`, `sim_max_steps`); tasks: templates in `tasks`, else the split
  remote        gui_jax env servers (`server_urls`, `token`/`token_env`): `RemoteEnv` sessions, one per slot
  miniwob       MiniWob++ pages in headless Chromium; tasks: `tasks` × seeds
  android       uiautomator2 devices (`serials`, one per slot; `connect_timeout_s`, `settle_s`); tasks: goals
                in `tasks` ('App|goal'); no rule check, so success comes from the judge (online.reward = rm)
  androidworld  AndroidWorld env servers (`server_urls`); tasks: task types in `tasks` (() = the server's
                suite) × seeds as task_idx; scored by the server
`server_urls` entries may be `dns://name:port` (every replica behind the name; `ServerFleet`). Every job that runs
episodes (online_rl, env_eval, evaluate, verifier_eval, self_improve) and the env server build envs here.
"""
from __future__ import annotations

import os
import queue
import threading
import time
from typing import Any, Callable, Optional, Sequence

from gui_jax.core.config_schema import RunError
from gui_jax.envs.pool import EnvPool, PoolConfig, ServerFleet

# Backends whose tasks come from the env block (phonesim / remote: the job's split unless env.tasks is set).
OWN_TASK_LIST = ("miniwob", "android", "androidworld")


def _get(env_cfg, name: str, default: Any = None) -> Any:
    v = env_cfg.get(name, default) if hasattr(env_cfg, "get") else getattr(env_cfg, name, default)
    return default if v is None else v


def backend_of(env_cfg) -> str:
    return str(_get(env_cfg, "backend", "phonesim"))


def _token(env_cfg) -> Optional[str]:
    return _get(env_cfg, "token", "") or os.environ.get(_get(env_cfg, "token_env", "GUI_JAX_ENV_TOKEN"), "") or None


def fleet(env_cfg, resolver=None) -> ServerFleet:
    """The backend's server URLs with dns:// names expanded (a RunError naming env.server_urls if none)."""
    urls = tuple(_get(env_cfg, "server_urls", ()))
    if not urls:
        raise RunError(f"config.env.server_urls = (): env.backend = {backend_of(env_cfg)!r} needs at least one "
                       "server URL, e.g. ('http://127.0.0.1:8765',)")
    try:
        return ServerFleet(urls, resolver)
    except Exception as e:  # noqa: BLE001 - a name that does not resolve, a malformed URL: one line
        raise RunError(f"config.env.server_urls = {urls!r}: {e}") from None


# --------------------------------------------------------------------------------------------- envs

def make_env_factory(env_cfg, *, render: bool, max_steps: int, resolver=None) -> Callable[[int], Any]:
    """slot -> a new env of `env.backend` (the pool calls it again to rebuild a failed slot). `max_steps`:
    the agent's step limit (the env's own limit is at least one more, so the agent's limit ends episodes)."""
    backend = backend_of(env_cfg)
    limit = max(int(_get(env_cfg, "sim_max_steps", 30)), max_steps + 1)
    call_s = float(_get(env_cfg, "call_timeout_s", 60.0))
    connect_s = float(_get(env_cfg, "connect_timeout_s", 10.0))
    resolution = tuple(_get(env_cfg, "resolution", (540, 1200)))
    if backend == "phonesim":
        from gui_jax.envs.sim import PhoneSim
        return lambda slot: PhoneSim(render=render, resolution=resolution, max_steps=limit, tree=True)
    if backend == "remote":
        from gui_jax.envs.backends import EnvOptions
        from gui_jax.envs.client import RemoteEnv
        servers, token = fleet(env_cfg, resolver), _token(env_cfg)
        opts = EnvOptions(render=render, resolution=resolution, max_steps=limit, tree=True)
        reset_s = float(_get(env_cfg, "reset_timeout_s", 120.0))
        return lambda slot: RemoteEnv(servers.url_for(slot), token, timeout_s=call_s, connect_timeout_s=connect_s,
                                      reset_timeout_s=reset_s, options=opts)
    if backend == "miniwob":
        from gui_jax.envs.miniwob import MiniWobEnv
        return lambda slot: MiniWobEnv(max_steps=max_steps + 1)
    if backend == "android":
        from gui_jax.envs.android import AndroidDeviceEnv
        serials = tuple(_get(env_cfg, "serials", ()))
        settle = float(_get(env_cfg, "settle_s", 0.5))
        return lambda slot: AndroidDeviceEnv.connect(serials[slot % len(serials)], connect_timeout_s=connect_s,
                                                     call_timeout_s=call_s, max_steps=max_steps + 1, settle_s=settle)
    if backend == "androidworld":
        from gui_jax.envs.androidworld import AndroidWorldEnv
        servers = fleet(env_cfg, resolver)
        return lambda slot: AndroidWorldEnv(servers.url_for(slot), timeout_s=call_s, connect_timeout_s=connect_s,
                                            max_steps=max_steps + 1)
    raise RunError(f"config.env.backend = {backend!r}: not one of phonesim, remote, miniwob, android, androidworld")


def pool_size(env_cfg) -> tuple[int, int]:
    """(active, standby) env slots: `n_envs` / `n_standby`, but one slot per device for android."""
    n, standby = int(_get(env_cfg, "n_envs", 8)), int(_get(env_cfg, "n_standby", 0))
    if backend_of(env_cfg) == "android":
        return len(tuple(_get(env_cfg, "serials", ()))), 0
    return n, standby


def make_pool(env_cfg, make_env: Callable[[int], Any]) -> EnvPool:
    active, standby = pool_size(env_cfg)
    return EnvPool(make_env, PoolConfig(
        n_active=active, n_standby=standby,
        call_timeout_s=float(_get(env_cfg, "call_timeout_s", 60.0)),
        reset_timeout_s=float(_get(env_cfg, "reset_timeout_s", 120.0)),
        lease_timeout_s=float(_get(env_cfg, "lease_timeout_s", 600.0)),
        health_interval_s=float(_get(env_cfg, "health_interval_s", 30.0))))


# --------------------------------------------------------------------------------------------- tasks

def backend_tasks(env_cfg, seeds: Optional[Sequence[int]] = None, resolver=None) -> Optional[list]:
    """The backend's tasks: `env.tasks` × `seeds` (default env.seeds); androidworld with no tasks: the first
    server's suite. None for phonesim / remote without env.tasks (the job's own split)."""
    backend = backend_of(env_cfg)
    names = tuple(_get(env_cfg, "tasks", ()))
    seeds = [int(s) for s in (seeds if seeds is not None else _get(env_cfg, "seeds", (0,)))]
    try:
        if backend in ("phonesim", "remote"):
            if not names:
                return None
            from gui_jax.envs.sim import make_task
            return [make_task(t, s) for t in names for s in seeds]
        if backend == "miniwob":
            from gui_jax.envs.miniwob import miniwob_tasks
            return miniwob_tasks(list(names), seeds)
        if backend == "android":
            from gui_jax.envs.android import android_tasks
            return android_tasks(names, seeds)
        if backend == "androidworld":
            from gui_jax.envs.androidworld import AndroidWorldEnv, AndroidWorldTask
            if not names:
                env = AndroidWorldEnv(fleet(env_cfg, resolver).url_for(0),
                                      timeout_s=float(_get(env_cfg, "call_timeout_s", 60.0)),
                                      connect_timeout_s=float(_get(env_cfg, "connect_timeout_s", 10.0)))
                try:
                    names = tuple(env.task_list())
                finally:
                    env.close()
            return [AndroidWorldTask(t, s) for t in names for s in seeds]
    except (KeyError, ValueError) as e:
        raise RunError(f"config.env.tasks = {names!r}: {str(e).strip(chr(39))}") from None
    raise RunError(f"config.env.backend = {backend!r}: not one of phonesim, remote, miniwob, android, androidworld")


# --------------------------------------------------------------------------------------------- reachability

def check_reachable(env_cfg, resolver=None) -> None:
    """Before a job does any work: every android serial answers uiautomator2's connect, every server (remote /
    androidworld) its health check, each within `connect_timeout_s`; else one RunError line naming the field."""
    backend = backend_of(env_cfg)
    timeout = float(_get(env_cfg, "connect_timeout_s", 10.0))
    if backend == "android":
        from gui_jax.envs.android import AndroidDeviceEnv
        items, field = tuple(_get(env_cfg, "serials", ())), "serials"
        if not items:
            raise RunError("config.env.serials = (): env.backend = 'android' needs at least one adb serial, "
                           "e.g. ('emulator-5554',)")

        def probe(serial):
            AndroidDeviceEnv.connect(serial, connect_timeout_s=timeout).close()
    elif backend in ("remote", "androidworld"):
        items, field = tuple(fleet(env_cfg, resolver).replicas), "server_urls"

        def probe(url):
            if backend == "remote":
                from gui_jax.envs.client import RemoteEnv
                env = RemoteEnv(url, _token(env_cfg), timeout_s=timeout, connect_timeout_s=timeout)
                try:
                    env.health(timeout)
                finally:
                    env.close()
            else:
                from gui_jax.envs.androidworld import AndroidWorldEnv
                env = AndroidWorldEnv(url, timeout_s=timeout, connect_timeout_s=timeout)
                try:
                    if not env.health():
                        raise ConnectionError("its /health does not report success")
                finally:
                    env.close()
    else:
        return
    # all at once, each bounded, on daemon threads (a probe stuck on a dead device never blocks the exit): a job
    # with 8 offline devices fails in one timeout, not eight
    answers: queue.SimpleQueue = queue.SimpleQueue()

    def attempt(i, item):
        try:
            probe(item)
            answers.put((i, None))
        except BaseException as e:  # delivered to the waiting caller
            answers.put((i, e))
    for i, item in enumerate(items):
        threading.Thread(target=attempt, args=(i, item), name=f"reach-{field}-{i}", daemon=True).start()
    deadline = time.monotonic() + timeout + 5.0  # the probes' own bounds end them first
    errors: dict = {}
    for _ in items:
        try:
            i, err = answers.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            break
        errors[i] = err
    for i, item in enumerate(items):  # the first configured one that failed
        if i not in errors:
            raise RunError(f"config.env.{field}: {item!r} did not answer within {timeout:g} s "
                           "(env.connect_timeout_s)")
        if errors[i] is not None:
            msg = " ".join(str(errors[i]).split())
            raise RunError(f"config.env.{field}: {item!r} is not reachable: {msg} "
                           f"(env.connect_timeout_s = {timeout:g} s)")
