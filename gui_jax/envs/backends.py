"""Env backends by name, for the env server and the env pool, and the server's wire format.

A backend knows how to build one env from validated options and how to turn a wire task reference
(a task name from its own registry + an int seed) into an `EnvTask`. Registering one is a single
call (the MiniWob++ backend will add itself the same way):

    register_backend(Backend("phonesim", make_env=_phonesim_env, make_task=_phonesim_task,
                             task_names=_phonesim_names))

The server never passes a client string to a shell, a file path or an import: a task name is
looked up in `task_names()` first, and the seed must be a bounded int.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Collection, Sequence

from gui_jax.envs.base import Env, EnvTask

MAX_SEED = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class EnvOptions:
    """Per-session env options (validated by the server's schema before they get here)."""

    render: bool = True
    resolution: tuple[int, int] = (540, 1200)  # (width, height) of the screenshot
    max_steps: int = 30
    tree: bool = True  # UI XML + element list in observations


@dataclasses.dataclass(frozen=True)
class Backend:
    name: str
    make_env: Callable[[EnvOptions], Env]
    make_task: Callable[[str, int], EnvTask]  # (name from task_names(), seed) -> task
    task_names: Callable[[], Collection[str]]


_BACKENDS: dict[str, Backend] = {}


def register_backend(backend: Backend) -> Backend:
    _BACKENDS[backend.name] = backend
    return backend


def get_backend(name: str) -> Backend:
    """A registered backend (phonesim); the android backend is built per server from its devices
    (`android_backend`)."""
    try:
        return _BACKENDS[name]
    except KeyError:
        raise KeyError(f"unknown env backend {name!r}; registered: {', '.join(sorted(_BACKENDS))}") from None


def backend_names() -> list[str]:
    return sorted(_BACKENDS)


def task_ref(task: Any) -> dict:
    """The wire reference of a task: {"name": template/env name, "seed": int}. PhoneSim tasks carry
    `template`; other backends' tasks carry `name` (or `env_name`)."""
    for attr in ("template", "name", "env_name"):
        name = getattr(task, attr, None)
        if isinstance(name, str):
            break
    else:
        raise TypeError(f"task {task!r} has no template/name/env_name string field to send to an env server")
    seed = getattr(task, "seed", None)
    if not isinstance(seed, int):
        raise TypeError(f"task {task!r} has no int seed to send to an env server")
    return {"name": name, "seed": int(seed)}


# ---- PhoneSim ------------------------------------------------------------------------------------

def _phonesim_env(opts: EnvOptions) -> Env:
    from gui_jax.envs.sim import PhoneSim
    return PhoneSim(render=opts.render, resolution=tuple(opts.resolution), max_steps=opts.max_steps,
                    tree=opts.tree)


def _phonesim_task(name: str, seed: int) -> EnvTask:
    from gui_jax.envs.sim import make_task
    return make_task(name, seed)


def _phonesim_names() -> Collection[str]:
    from gui_jax.envs.sim import TEMPLATES
    return TEMPLATES.keys()


register_backend(Backend("phonesim", _phonesim_env, _phonesim_task, _phonesim_names))


# ---- Android devices (uiautomator2) --------------------------------------------------------------

def android_backend(serials: Sequence[str], tasks: Sequence[str], *, connect_timeout_s: float = 10.0,
                    call_timeout_s: float = 60.0, settle_s: float = 0.5) -> Backend:
    """A server backend over the given devices: each session takes a free serial (one session per device;
    closing the session frees it) and tasks are the given goals ('App|goal'), named 'android.<goal words>'."""
    import threading

    from gui_jax.envs.android import AndroidDeviceEnv, android_tasks
    if not serials:
        raise ValueError("the android backend needs at least one device serial (--serial emulator-5554)")
    by_name = {t.name: t for t in android_tasks(tasks)}
    lock, in_use = threading.Lock(), set()

    def make_env(opts: EnvOptions) -> Env:
        with lock:
            free = [s for s in serials if s not in in_use]
            if not free:
                raise RuntimeError(f"all {len(serials)} devices are in use")
            serial = free[0]
            in_use.add(serial)
        try:
            env = AndroidDeviceEnv.connect(serial, connect_timeout_s=connect_timeout_s, call_timeout_s=call_timeout_s,
                                           max_steps=opts.max_steps, settle_s=settle_s)
        except BaseException:
            with lock:
                in_use.discard(serial)
            raise
        close = env.close

        def release() -> None:
            try:
                close()
            finally:
                with lock:
                    in_use.discard(serial)
        env.close = release
        return env

    def make_task(name: str, seed: int) -> EnvTask:
        return dataclasses.replace(by_name[name], seed=int(seed))

    return Backend("android", make_env, make_task, lambda: by_name.keys())


# ---- wire format (shared by the server and `RemoteEnv`) ------------------------------------------

def encode_png(img) -> str:
    import base64
    import io

    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG", compress_level=1)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def decode_png(data: str):
    import base64
    import io

    import numpy as np
    from PIL import Image
    with Image.open(io.BytesIO(base64.b64decode(data, validate=True))) as im:
        return np.asarray(im.convert("RGB"), dtype=np.uint8)


def encode_observation(obs) -> dict:
    """Observation -> JSON dict (screenshot as base64 PNG: lossless, so bytes round-trip exactly)."""
    return {
        "screenshot_png": encode_png(obs.screenshot),
        "ui_xml": obs.ui_xml,
        "ui_elements": [e.to_dict() for e in obs.ui_elements],
        "current_app": obs.current_app,
        "goal": obs.goal,
        "screen_size": [int(v) for v in obs.screen_size],
    }


def decode_observation(d: dict):
    from gui_jax.core.types import Observation, UIElement
    try:
        return Observation(
            screenshot=decode_png(d["screenshot_png"]),
            ui_elements=[UIElement.from_dict(e) for e in d["ui_elements"]],
            ui_xml=d["ui_xml"],
            current_app=d["current_app"],
            goal=d["goal"],
            screen_size=tuple(int(v) for v in d["screen_size"]),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"malformed observation from env server: {type(e).__name__}: {e}") from None


def json_safe(v: Any) -> Any:
    """`info` values as JSON types (numpy scalars -> Python, tuples -> lists, others -> str)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {str(k): json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    item = getattr(v, "item", None)
    if callable(item):
        try:
            return json_safe(item())
        except (TypeError, ValueError):
            pass
    return str(v)
