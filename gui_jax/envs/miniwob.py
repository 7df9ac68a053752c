"""MiniWob++ backend (the `miniwob` gymnasium package in headless Chromium) behind the env protocol.

    env = MiniWobEnv()
    task = MiniWobTask("click-button", seed=3)
    obs = env.reset(task)                       # fills task.goal with the page's instruction
    obs, done, info = env.step(Action("click", x=80, y=105))
    env.close()

Observation: the 160×210 task area as the screenshot, the page's DOM elements as `UIElement`s (bounds in
the same pixels, `resource_id` = the HTML id, `text` = text or input value) and the instruction as `goal`;
`screen_size` is the task area, so coordinates need no rescaling. Our actions map onto MiniWob's action
space: click(x,y) → CLICK_COORDS; a click with only `element` → CLICK_ELEMENT on that element;
type(text) → TYPE_TEXT into the focused field; key(text) and system_button(Enter) → PRESS_KEY;
scroll(up|down) → the mouse wheel at the centre. terminate(...) ends the episode as it stands (success only
if the page already scored it); answer/wait do nothing. long_press, swipe, open and Back/Home/Menu have no
MiniWob meaning: they are invalid (info["valid"] = False, the page is unchanged).
Reward: info["reward"] is the package's own reward (time-scaled, in [-1, 1]) and info["raw_reward"] the
unscaled one; success = raw reward > 0 when the page ends the episode.

Chromium and ChromeDriver come from the system (Debian: `apt-get install -y chromium chromium-driver`), or
from MINIWOB_CHROME_BINARY / MINIWOB_CHROMEDRIVER. They run headless with the flags this sandboxed,
offline setting needs (no sandbox, no GPU, no background networking, no component updates, no sync).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from gui_jax.core.labels import resolve_label
from gui_jax.core.types import Action, Observation, UIElement
from gui_jax.envs.base import EnvFailure

# The MiniWob++ tasks AndroidWorld registers (92 pages its authors verified to be achievable by a person
# on a phone). One, drag-item, does not ship with the `miniwob` package (see `available_tasks()`).
ANDROIDWORLD_MINIWOB_TASKS: tuple[str, ...] = (
    "bisect-angle", "book-flight", "choose-date", "choose-date-easy", "choose-date-medium", "choose-list",
    "circle-center", "click-button", "click-button-sequence", "click-checkboxes", "click-checkboxes-large",
    "click-checkboxes-soft", "click-checkboxes-transfer", "click-collapsible", "click-collapsible-2",
    "click-color", "click-dialog", "click-dialog-2", "click-link", "click-menu-2", "click-option", "click-pie",
    "click-scroll-list", "click-shades", "click-shape", "click-tab", "click-tab-2", "click-tab-2-easy",
    "click-tab-2-hard", "click-tab-2-medium", "click-test", "click-test-2", "click-test-transfer",
    "click-widget", "copy-paste", "copy-paste-2", "count-shape", "count-sides", "drag-box", "drag-item",
    "email-inbox", "email-inbox-delete", "email-inbox-forward", "email-inbox-forward-nl",
    "email-inbox-forward-nl-turk", "email-inbox-important", "email-inbox-nl-turk", "email-inbox-noscroll",
    "email-inbox-reply", "email-inbox-star-reply", "enter-date", "enter-password", "enter-text",
    "enter-text-2", "enter-text-dynamic", "enter-time", "find-midpoint", "find-word", "focus-text",
    "focus-text-2", "grid-coordinate", "guess-number", "highlight-text", "highlight-text-2", "identify-shape",
    "login-user", "login-user-popup", "multi-layouts", "multi-orderings", "navigate-tree", "read-table",
    "read-table-2", "resize-textarea", "right-angle", "scroll-text", "scroll-text-2", "search-engine",
    "simon-says", "simple-algebra", "simple-arithmetic", "social-media", "social-media-all",
    "social-media-some", "terminal", "text-transform", "tic-tac-toe", "unicode-test", "use-autocomplete",
    "use-colorwheel", "use-colorwheel-2", "use-slider", "visual-addition",
)

CHROME_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--disable-extensions", "--disable-default-apps")
INSTALL_HINT = "apt-get install -y chromium chromium-driver"
# our key names → MiniWob's PRESS_KEY names
_KEYS = {"enter": "<Enter>", "tab": "<Tab>", "backspace": "<Backspace>", "delete": "<Delete>",
         "space": "<Space>", "up": "<ArrowUp>", "down": "<ArrowDown>", "left": "<ArrowLeft>",
         "right": "<ArrowRight>", "pageup": "<PageUp>", "pagedown": "<PageDown>"}
_CLICKABLE_TAGS = ("button", "a", "input", "select", "option", "label", "textarea", "span", "svg")


class ChromiumMissingError(RuntimeError):
    """Chromium or ChromeDriver is not installed."""


@dataclass
class MiniWobTask:
    """A MiniWob++ page and the seed of its episode. The instruction is drawn by the page's seeded RNG when
    the episode starts, so `goal` is filled by `MiniWobEnv.reset`."""

    env_name: str
    seed: int
    goal: str = ""
    fields: dict = field(default_factory=dict)  # the package's parsed instruction fields (for scripts)

    @property
    def task_id(self) -> str:
        return f"miniwob.{self.env_name}#{self.seed}"

    @property
    def template(self) -> str:
        return f"miniwob.{self.env_name}"

    @property
    def difficulty(self) -> str:
        return "miniwob"


def available_tasks() -> list[str]:
    """The pages the installed `miniwob` package ships (file names without .html)."""
    import miniwob
    folder = os.path.join(os.path.dirname(miniwob.__file__), "html", "miniwob")
    return sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".html"))


def miniwob_tasks(names: Sequence[str], seeds: Sequence[int]) -> list[MiniWobTask]:
    """Tasks for every (name, seed); unknown names raise with close matches."""
    have = set(available_tasks())
    for n in names:
        if n not in have:
            import difflib
            close = difflib.get_close_matches(n, sorted(have), n=3)
            raise ValueError(f"unknown MiniWob++ task {n!r}" + (f"; did you mean {close}?" if close else ""))
    return [MiniWobTask(n, int(s)) for n in names for s in seeds]


def find_chromium() -> tuple[str, str]:
    """(chromium binary, chromedriver) from MINIWOB_CHROME_BINARY/MINIWOB_CHROMEDRIVER or the PATH."""
    chrome = os.environ.get("MINIWOB_CHROME_BINARY") or shutil.which("chromium") or shutil.which("chromium-browser")
    driver = os.environ.get("MINIWOB_CHROMEDRIVER") or shutil.which("chromedriver")
    if not chrome or not driver:
        missing = " and ".join(n for n, p in (("Chromium", chrome), ("ChromeDriver", driver)) if not p)
        raise ChromiumMissingError(f"MiniWob++ needs {missing}; install with: {INSTALL_HINT}")
    return chrome, driver


def _make_instance_class():
    """A SeleniumInstance whose driver starts our system Chromium with offline-safe flags."""
    from miniwob.selenium_instance import SeleniumInstance
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    class SystemChromiumInstance(SeleniumInstance):
        def create_driver(self):
            chrome, driver = find_chromium()
            options = webdriver.ChromeOptions()
            options.binary_location = chrome
            for flag in CHROME_FLAGS:
                options.add_argument(flag)
            self._profile = tempfile.mkdtemp(prefix="gui_jax_chromium_")
            options.add_argument(f"--user-data-dir={self._profile}")
            # headless Chromium counts its (invisible) toolbars in the window size: leave room for them so
            # the whole task area is inside the viewport
            options.add_argument(f"--window-size={self.window_width + 300},{self.window_height + 280}")
            self.driver = webdriver.Chrome(service=Service(executable_path=driver), options=options)
            self.driver.implicitly_wait(5)
            self.driver.get(self.url)
            WebDriverWait(self.driver, 10).until(
                expected_conditions.element_to_be_clickable((By.ID, self.SYNC_SCREEN_ID)))
            self.inner_width, self.inner_height = self.driver.execute_script(
                "return [window.innerWidth, window.innerHeight];")

        def close(self):
            super().close()
            shutil.rmtree(getattr(self, "_profile", ""), ignore_errors=True)

    return SystemChromiumInstance


def _make_env(name: str, wait_ms: float):
    from miniwob.environment import MiniWoBEnvironment
    instance_cls = _make_instance_class()

    class Env(MiniWoBEnvironment):
        def _hard_reset_instance(self):
            if getattr(self, "instance", None):
                self.instance.close()
            self.instance = instance_cls(index=0, **self.instance_kwargs)
            self.instance.start()
            self.instance.wait()
            if self.instance.died:
                raise EnvFailure(f"MiniWob++ page {name!r} did not start in Chromium")

    return Env(subdomain=name, wait_ms=wait_ms)


def dom_to_elements(dom_elements: Sequence[dict]) -> tuple[list[UIElement], list[int]]:
    """MiniWob DOM records → (UIElements indexed 0..n-1, the MiniWob `ref` of each)."""
    elements, refs = [], []
    for rec in dom_elements:
        left, top, w, h = (float(np.asarray(rec[k]).reshape(-1)[0]) for k in ("left", "top", "width", "height"))
        if w <= 0 or h <= 0:
            continue
        flags = np.asarray(rec.get("flags", (0, 0, 0, 0))).astype(bool).tolist() + [False] * 4
        tag = str(rec["tag"])
        text = str(rec.get("text") or "") or str(rec.get("value") or "")
        is_leaf = flags[3]
        elements.append(UIElement(
            index=len(elements), cls=tag, bounds=(int(round(left)), int(round(top)), int(round(left + w)),
                                                  int(round(top + h))),
            text=text, resource_id=str(rec.get("id") or ""),
            clickable=tag.split("_")[0].lower() in _CLICKABLE_TAGS or (is_leaf and tag != "t"),
            focusable=tag.lower().startswith(("input", "textarea")), focused=flags[0],
            checked=bool(rec.get("checked", False))))
        refs.append(int(rec["ref"]))
    return elements, refs


class MiniWobEnv:
    """One Chromium per page name, reused across episodes of that page (starting Chromium takes seconds)."""

    def __init__(self, *, max_steps: int = 10, wait_ms: float = 0.0, max_cached_pages: int = 4):
        find_chromium()  # fail at once, with the install command, when Chromium is missing
        self.max_steps, self.wait_ms, self.max_cached_pages = max_steps, wait_ms, max_cached_pages
        self._envs: dict = {}
        self._task: Optional[MiniWobTask] = None
        self._refs: list[int] = []
        self._steps = 0
        self._done = True
        self._last: Optional[Observation] = None

    def _env(self, name: str):
        if name not in self._envs:
            if len(self._envs) >= self.max_cached_pages:
                old = next(iter(self._envs))
                self._envs.pop(old).close()
            try:
                self._envs[name] = _make_env(name, self.wait_ms)
            except EnvFailure:
                raise
            except Exception as e:  # selenium / driver start-up errors are infrastructure faults
                raise EnvFailure(f"MiniWob++ page {name!r} failed to start: {type(e).__name__}: {e}") from e
        return self._envs[name]

    def _observation(self, raw: dict, size: tuple[int, int]) -> Observation:
        elements, self._refs = dom_to_elements(raw.get("dom_elements", ()))
        shot = np.ascontiguousarray(np.asarray(raw["screenshot"], np.uint8)[..., :3])
        return Observation(screenshot=shot, ui_elements=elements, current_app="miniwob",
                           goal=str(raw.get("utterance", "")), screen_size=size)

    def reset(self, task: MiniWobTask) -> Observation:
        if not isinstance(task, MiniWobTask):
            raise TypeError(f"MiniWobEnv.reset takes a MiniWobTask, got {type(task).__name__}")
        env = self._env(task.env_name)
        raw, _ = env.reset(seed=int(task.seed))
        task.goal = str(raw["utterance"])
        task.fields = dict(raw.get("fields", ()))
        self._size = (env.instance.task_width, env.instance.task_height)
        self._task, self._steps, self._done = task, 0, False
        self._last = self._observation(raw, self._size)
        return self._last

    def to_miniwob(self, action: Action):
        """Our Action → (MiniWob action dict or None for a no-op, reason when invalid)."""
        env = self._envs[self._task.env_name]
        t = action.type
        w, h = self._size
        if t == "click" and action.x is not None:
            return env.create_action("CLICK_COORDS", coords=np.array([action.x, action.y], np.float32)), None
        if t == "click" and action.x is None and action.element is None and action.text is not None:
            idx = resolve_label(action.text, self._last.ui_elements if self._last is not None else [])
            if idx is None:
                return None, f"label {action.text!r} names no element on this page"
            action = action.replace(element=idx, text=None)
        if t == "click" and action.element is not None:
            if not 0 <= action.element < len(self._refs):
                return None, f"element {action.element} out of range (0..{len(self._refs) - 1})"
            return env.create_action("CLICK_ELEMENT", ref=self._refs[action.element]), None
        if t == "type":
            return env.create_action("TYPE_TEXT", text=action.text or ""), None
        if t in ("key", "system_button"):
            name = _KEYS.get((action.text or action.button or "").strip().lower())
            keys = list(env.action_space_config.allowed_keys)
            if name is None or name not in keys:
                return None, f"key {action.text or action.button!r} has no MiniWob meaning"
            return env.create_action("PRESS_KEY", key=keys.index(name)), None
        if t == "scroll" and action.direction in ("up", "down"):
            kind = "SCROLL_UP_COORDS" if action.direction == "up" else "SCROLL_DOWN_COORDS"
            return env.create_action(kind, coords=np.array([w / 2, h / 2], np.float32)), None
        if t in ("answer", "wait", "terminate"):
            return None, None
        return None, f"action {t!r} has no MiniWob meaning"

    def step(self, action: Action) -> tuple[Observation, bool, dict]:
        if self._task is None or self._done:
            raise RuntimeError("MiniWobEnv.step before reset (or after the episode ended)")
        self._steps += 1
        env = self._envs[self._task.env_name]
        mw_action, reason = self.to_miniwob(action)
        info = {"valid": reason is None, "reward": 0.0, "raw_reward": 0.0, "success": False}
        if reason is not None:
            info["reason"] = reason
        if mw_action is not None:
            from selenium.common.exceptions import MoveTargetOutOfBoundsException, WebDriverException
            try:
                raw, reward, done, _, meta = env.step(mw_action)
            except MoveTargetOutOfBoundsException:
                info.update(valid=False, reason=f"{action.type} at ({action.x}, {action.y}) is outside the page")
                return self._finish_step(action, info)
            except WebDriverException as e:
                raise EnvFailure(f"Chromium failed on {self._task.task_id}: {type(e).__name__}") from e
            info.update(reward=float(reward), raw_reward=float(meta.get("raw_reward") or 0.0))
            if done:
                info["success"] = info["raw_reward"] > 0
                self._done = True
                return self._last, True, info
            self._last = self._observation(raw, self._size)
        return self._finish_step(action, info)

    def _finish_step(self, action: Action, info: dict) -> tuple[Observation, bool, dict]:
        if action.type == "terminate" or self._steps >= self.max_steps:
            self._done = True
            return self._last, True, info
        return self._last, False, info

    def close(self) -> None:
        for env in self._envs.values():
            try:
                env.close()
            except Exception:  # a dead Chromium needs no closing
                pass
        self._envs.clear()
