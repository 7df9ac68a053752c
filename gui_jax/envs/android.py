"""Real Android devices and emulators through uiautomator2, behind the env protocol.

    env = AndroidDeviceEnv.connect("emulator-5554")           # adb serial, or "host:port" of adb-over-TCP
    obs = env.reset(AndroidTask("Turn on Wi-Fi", app="Settings", check=wifi_is_on))
    obs, done, info = env.step(Action("click", x=540, y=1200))
    env.close()

Observation: the device screenshot, the `dump_hierarchy` XML and its UI elements (parsed by envs/xml.py;
the prompt builder simplifies them as MobileRL does), screen_size = the device's window size.
Actions follow AndroidWorld's conventions: click → click; long_press → long click (`time` seconds, default
1 s); swipe → finger swipe; scroll(direction) → content direction, i.e. `scroll down` drags the finger from
the centre towards the top edge (the content moves up), as AndroidWorld executes it; type(text) → click at
(x, y) first when given, then uiautomator2's send_keys into the focused field; key/system_button Back, Home,
Enter, Menu → press; open(app) → launch the app's package (`AndroidDeviceEnv(app_packages=...)` maps names
to packages; unknown names are invalid actions); wait(time) → sleep (≤ max_wait_s); answer(text) → recorded
for the task's check; terminate(status) → the episode ends and the task's own `check(device, answer)`
decides success: success = terminate(success) and the check passes; the step limit or terminate(failure) is
a failure; a task without a check reports info["success"] = None (judge it with a reward model).
Every device call runs with a timeout (`call_timeout_s`); a device that is offline or stops answering
raises `DeviceError` (an `EnvFailure`), never hangs.

From a job or the env server (the `env` block's backend table, gui_jax/envs/factory.py):
    python -m gui_jax.main --config configs/grpo_online.py --config.env.backend=android \
        --config.env.serials='("emulator-5554",)' --config.env.tasks='("Settings|Turn on Wi-Fi",)'
    python -m gui_jax.envs.server --backend android --serial emulator-5554 --task "Settings|Turn on Wi-Fi"
One env slot per serial; `env.tasks` entries are goals, "App|goal" to launch App at reset (`android_tasks`).
Tasks given this way have no rule check: their success comes from the judge (online.reward = rm), else 0.
Every serial is reached once before a job starts (`connect_timeout_s`): an offline device stops the job with a
one-line error. docs/devices.md has the emulator set-up step by step.
"""
from __future__ import annotations

import concurrent.futures
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from gui_jax.core.labels import resolve_label
from gui_jax.core.types import Action, Observation
from gui_jax.envs.base import EnvFailure
from gui_jax.envs.xml import parse_ui_xml

# AndroidWorld's app names → packages, for the apps its tasks use (extend with app_packages=...)
DEFAULT_APP_PACKAGES = {
    "settings": "com.android.settings", "chrome": "com.android.chrome", "contacts": "com.google.android.contacts",
    "clock": "com.google.android.deskclock", "camera": "com.android.camera2", "files": "com.google.android.documentsui",
    "markor": "net.gsantner.markor", "simple calendar pro": "com.simplemobiletools.calendar.pro",
    "audio recorder": "com.dimowner.audiorecorder", "expense": "com.arduia.expense", "broccoli": "com.flauschcode.broccoli",
    "simple sms messenger": "com.simplemobiletools.smsmessenger", "tasks": "org.tasks", "retro music": "code.name.monkey.retromusic",
}
_KEYS = {"Back": "back", "Home": "home", "Enter": "enter", "Menu": "menu"}


class DeviceError(EnvFailure):
    """The device is offline, refused the connection, or did not answer within the call timeout."""


@dataclass
class AndroidTask:
    """A goal on a real device: `app` is launched at reset (optional); `check(device, answer) -> bool` is
    the task's success test (None = no rule check)."""

    goal: str
    app: str = ""
    name: str = "android"
    seed: int = 0
    check: Optional[Callable[[Any, Optional[str]], bool]] = None

    @property
    def task_id(self) -> str:
        return f"{self.name}#{self.seed}"

    @property
    def template(self) -> str:  # per-task tables and the env server's task reference name it so
        return self.name


def parse_task_spec(spec: str, seed: int = 0) -> AndroidTask:
    """'App|goal' (App launched at reset) or 'goal' → an AndroidTask named 'android.<goal words>'."""
    app, sep, goal = spec.partition("|")
    if not sep:
        app, goal = "", spec
    goal, app = goal.strip(), app.strip()
    if not goal:
        raise ValueError(f"android task {spec!r}: empty goal (expected 'goal' or 'App|goal')")
    slug = re.sub(r"[^a-z0-9]+", "_", goal.lower()).strip("_")[:80] or "task"
    return AndroidTask(goal=goal, app=app, name=f"android.{slug}", seed=int(seed))


def android_tasks(specs: Sequence[str], seeds: Sequence[int] = (0,)) -> list[AndroidTask]:
    """One task per (spec, seed); two specs with the same goal words would share a task id: refused."""
    tasks = [parse_task_spec(s, seed) for s in specs for seed in seeds]
    names: dict[str, str] = {}
    for spec in specs:
        name = parse_task_spec(spec).name
        if names.setdefault(name, spec) != spec:
            raise ValueError(f"android tasks {names[name]!r} and {spec!r} share the name {name!r}; reword one goal")
    return tasks


class AndroidDeviceEnv:
    def __init__(self, device: Any, *, call_timeout_s: float = 20.0, max_steps: int = 30, settle_s: float = 0.5,
                 max_wait_s: float = 10.0, app_packages: Optional[dict] = None, serial: str = ""):
        self.device, self.serial = device, serial
        self.call_timeout_s, self.max_steps, self.settle_s, self.max_wait_s = call_timeout_s, max_steps, settle_s, max_wait_s
        self.app_packages = {**DEFAULT_APP_PACKAGES, **{k.lower(): v for k, v in (app_packages or {}).items()}}
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="u2")
        self._task: Optional[AndroidTask] = None
        self._steps, self._done, self._answer = 0, True, None

    @classmethod
    def connect(cls, serial: str, *, connect_timeout_s: float = 30.0, **kw) -> "AndroidDeviceEnv":
        """uiautomator2.connect(serial) with a bounded wait; an offline device raises DeviceError at once. The
        connect runs on a daemon thread: one stuck on a dead device never keeps the process from exiting."""
        import queue
        import threading

        import uiautomator2 as u2
        answer: queue.SimpleQueue = queue.SimpleQueue()

        def attempt():
            try:
                answer.put((True, u2.connect(serial)))
            except BaseException as e:  # delivered to the waiting caller
                answer.put((False, e))
        threading.Thread(target=attempt, name=f"u2-connect-{serial}", daemon=True).start()
        try:
            ok, value = answer.get(timeout=connect_timeout_s)
        except queue.Empty:
            raise DeviceError(f"device {serial!r}: uiautomator2 did not connect within {connect_timeout_s:g} s "
                              "(is it online in `adb devices`?)") from None
        if not ok:
            e = value
            raise DeviceError(f"device {serial!r} is offline or unreachable: {type(e).__name__}: {e}") from e
        return cls(value, serial=serial, **kw)

    # ------------------------------------------------------------------ bounded device calls
    def _call(self, what: str, fn: Callable, *args, **kw):
        fut = self._pool.submit(fn, *args, **kw)
        try:
            return fut.result(timeout=self.call_timeout_s)
        except concurrent.futures.TimeoutError:
            # the worker thread may stay stuck on the dead connection: start a fresh one for later calls
            self._pool.shutdown(wait=False)
            self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="u2")
            raise DeviceError(f"device {self.serial or ''}: {what} did not answer within "
                              f"{self.call_timeout_s:g} s") from None
        except EnvFailure:
            raise
        except Exception as e:
            raise DeviceError(f"device {self.serial or ''}: {what} failed: {type(e).__name__}: {e}") from e

    def observe(self) -> Observation:
        xml = self._call("dump_hierarchy", self.device.dump_hierarchy)
        image = self._call("screenshot", self.device.screenshot)
        width, height = self._call("window_size", self.device.window_size)
        shot = np.ascontiguousarray(np.asarray(image.convert("RGB"), np.uint8))
        return Observation(screenshot=shot, ui_elements=parse_ui_xml(xml), ui_xml=xml,
                           goal=self._task.goal if self._task else "", screen_size=(int(width), int(height)))

    # ------------------------------------------------------------------ env protocol
    def reset(self, task: AndroidTask) -> Observation:
        self._task, self._steps, self._done, self._answer = task, 0, False, None
        self._call("press home", self.device.press, "home")
        if task.app:
            package = self.app_packages.get(task.app.lower())
            if package is None:
                raise ValueError(f"task {task.task_id}: no package known for app {task.app!r}; "
                                 f"pass app_packages={{{task.app!r}: 'the.package.name'}}")
            self._call(f"launch {package}", self.device.app_start, package)
        self._settle()
        return self.observe()

    def _settle(self) -> None:
        if self.settle_s > 0:
            time.sleep(self.settle_s)

    def _apply(self, a: Action) -> Optional[str]:
        """Executes `a` on the device; returns the reason when the action cannot be executed."""
        d = self.device
        if a.type in ("click", "long_press") and a.x is None:
            # by element index or label: the centre of that element in the current hierarchy
            elements = parse_ui_xml(self._call("dump_hierarchy", d.dump_hierarchy))
            idx = a.element if a.element is not None else resolve_label(a.text or "", elements)
            hit = next((e for e in elements if e.index == idx), None)
            if hit is None:
                named = f"element {a.element}" if a.element is not None else f"label {a.text!r}"
                return f"{a.type}: {named} names no element on this screen"
            a = a.replace(x=hit.center[0], y=hit.center[1])
        if a.type == "click":
            self._call("click", d.click, a.x, a.y)
        elif a.type == "long_press":
            self._call("long_click", d.long_click, a.x, a.y, float(a.time or 1.0))
        elif a.type == "swipe":
            self._call("swipe", d.swipe, a.x, a.y, a.x2, a.y2, 0.3)
        elif a.type == "scroll":
            w, h = self._call("window_size", d.window_size)
            cx, cy = w / 2, h / 2
            end = {"down": (cx, 0), "up": (cx, h - 1), "right": (0, cy), "left": (w - 1, cy)}[a.direction]
            self._call("scroll", d.swipe, cx, cy, end[0], end[1], 0.3)
        elif a.type == "type":
            if a.x is not None:
                self._call("click", d.click, a.x, a.y)
            self._call("send_keys", d.send_keys, a.text or "")
        elif a.type in ("system_button", "key"):
            name = _KEYS.get(a.button or (a.text or "").strip().capitalize())
            if name is None:
                return f"no device key for {a.button or a.text!r}"
            self._call(f"press {name}", d.press, name)
        elif a.type == "open":
            package = self.app_packages.get((a.text or "").lower())
            if package is None:
                return f"unknown app {a.text!r} (no package mapping)"
            self._call(f"launch {package}", d.app_start, package)
        elif a.type == "wait":
            time.sleep(min(float(a.time or 1.0), self.max_wait_s))
        elif a.type == "answer":
            self._answer = a.text
        return None

    def step(self, action: Action) -> tuple[Observation, bool, dict]:
        if self._task is None or self._done:
            raise RuntimeError("AndroidDeviceEnv.step before reset (or after the episode ended)")
        self._steps += 1
        info: dict = {"valid": True, "success": False}
        if action.type == "terminate":
            self._done = True
        else:
            reason = self._apply(action)
            if reason:
                info.update(valid=False, reason=reason)
            elif action.type not in ("answer", "wait"):
                self._settle()
        if self._steps >= self.max_steps:
            self._done, info["truncated"] = True, True
        obs = self.observe()
        if self._done:
            check = self._task.check
            ok = None if check is None else bool(self._call("task check", check, self.device, self._answer))
            claimed = action.type == "terminate" and action.status == "success"
            info["success"] = (ok if claimed else False) if ok is not None else None
            info["answer"] = self._answer
        return obs, self._done, info

    def close(self) -> None:
        self._task = None
        self._pool.shutdown(wait=False)
