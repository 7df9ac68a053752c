"""The simulated phone: back stack, launcher, keyboard focus, clipboard, toasts, action dispatch.

All app state lives in `App` objects owned by the device; `screen()` rebuilds the widget tree
from that state (cached until the next state change). `apply(action)` returns (valid, reason);
an invalid action changes nothing, as on a phone.
"""

from __future__ import annotations

import difflib
import re
from typing import Optional

from gui_jax.core.labels import resolve_label
from gui_jax.core.types import Action
from gui_jax.envs.sim.ui import UI
from gui_jax.envs.sim.uixml import screen_elements
from gui_jax.envs.sim.widgets import KEYBOARD_H, Dialog, H, PageRef, Screen, W


def norm_name(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


class Device:
    """A phone with apps. `apps` maps package-ish key -> App instance (see apps/__init__.py)."""

    def __init__(self, app_classes, date=(2026, 3, 16), clock="09:41"):
        self.date, self.clock = date, clock
        self.apps = {}
        for cls in app_classes:
            app = cls(self)
            self.apps[app.key] = app
        self.stack: list[PageRef] = [PageRef("launcher", "home")]
        self.focus: Optional[tuple] = None  # (id(PageRef), form key)
        self._submit = None
        self.clipboard = ""
        self.toast_text, self._toast_ttl = "", 0
        self._screen: Optional[Screen] = None
        self.steps = 0

    # ---- helpers used by apps ------------------------------------------------------------
    @property
    def settings(self):
        return self.apps["settings"]

    @property
    def top(self) -> PageRef:
        return self.stack[-1]

    def push(self, app, page: str, form: Optional[dict] = None, **args) -> None:
        self.focus = None
        self.stack.append(PageRef(app.key, page, args, dict(form or {})))

    def replace(self, app, page: str, form: Optional[dict] = None, **args) -> None:
        self.stack.pop()
        self.push(app, page, form, **args)

    def back(self) -> None:
        if self.focus is not None:
            self.focus = None  # Back first hides the keyboard
        elif self.top.dialog is not None:
            self.top.dialog = None
        elif len(self.stack) > 1:
            self.stack.pop()

    def up(self) -> None:
        """App-bar arrow: leave the page (closing keyboard and dialog with it)."""
        self.focus = None
        if len(self.stack) > 1:
            self.stack.pop()

    def home(self) -> None:
        self.focus = None
        self.stack = [PageRef("launcher", "home")]

    def open_app(self, key: str) -> None:
        self.home()
        app = self.apps[key]
        self.stack.append(PageRef(key, app.main_page))

    def dialog(self, title: str, message: str = "", buttons=(), fields=()) -> None:
        self.top.dialog = Dialog(title, message, list(buttons), list(fields))
        self.focus = None

    def close_dialog(self) -> None:
        self.top.dialog = None
        self.focus = None

    def toast(self, text: str) -> None:
        self.toast_text, self._toast_ttl = text, 2

    def copy(self, text: str) -> None:
        self.clipboard = text
        self.toast("Copied to clipboard")

    def paste_into(self, ref: PageRef, key: str) -> None:
        if self.clipboard:
            ref.form[key] = str(ref.form.get(key, "")) + self.clipboard
            self.focus = (id(ref), key)

    def set_focus(self, ref: PageRef, key: str, on_submit) -> None:
        self.focus = (id(ref), key)
        self._submit = on_submit

    def find_app(self, name: str) -> Optional[str]:
        """Fuzzy app lookup by label, key or alias."""
        q = norm_name(name)
        if not q:
            return None
        names = {}
        for key, app in self.apps.items():
            for n in (app.label, key) + tuple(app.aliases):
                names[norm_name(n)] = key
        if q in names:
            return names[q]
        for n, key in names.items():
            if (len(q) >= 3 and q in n) or (len(n) >= 4 and n in q):
                return key
        close = difflib.get_close_matches(q, list(names), n=1, cutoff=0.75)
        return names[close[0]] if close else None

    # ---- screen ---------------------------------------------------------------------------
    def invalidate(self) -> None:
        self._screen = None

    def screen(self) -> Screen:
        if self._screen is None:
            ref = self.top
            dark = bool(self.settings.dark)
            if ref.app == "launcher":
                ui = UI(self, ref, "launcher", dark)
                self._launcher(ui)
                app_label = "launcher"
            else:
                app = self.apps[ref.app]
                ui = UI(self, ref, app.key, dark)
                getattr(app, "page_" + ref.page)(ui, ref)
                app_label = app.key
            keyboard = self.focus is not None and self.focus[0] == id(ref)
            self._screen = ui.finish(app_label, keyboard, self.toast_text)
        return self._screen

    def _launcher(self, ui: UI) -> None:
        ui.spacer(200)
        ui.text(self.clock, size="big", rid="clock")
        ui.text(f"Monday, {self.date[0]}-{self.date[1]:02d}-{self.date[2]:02d}", rid="date", size="small")
        ui.spacer(120)
        entries = [(a.label, a.label[0], a.color, (lambda k=k: self.open_app(k))) for k, a in self.apps.items()]
        ui.grid(entries)

    # ---- actions --------------------------------------------------------------------------
    def hit(self, x: float, y: float):
        scr = self.screen()
        if scr.keyboard and y >= H - KEYBOARD_H:
            return None
        for node in reversed(scr.flat):
            x1, y1, x2, y2 = node.bounds
            if node.enabled and (node.on_click or node.on_point) and x1 <= x < x2 and y1 <= y < y2:
                return node
        return None

    def scroll(self, direction: str, amount: Optional[int] = None) -> tuple[bool, str]:
        scr = self.screen()
        if scr.scroll_node is None or direction not in ("up", "down"):
            return False, "nothing scrollable in that direction"
        x1, y1, x2, y2 = scr.scroll_node.bounds
        amount = int(amount if amount is not None else (y2 - y1) * 0.6)
        ref = self.top
        new = min(max(ref.scroll + (amount if direction == "down" else -amount), 0), scr.scroll_max)
        if new == ref.scroll:
            return False, f"already at the {'bottom' if direction == 'down' else 'top'}"
        ref.scroll = new
        return True, ""

    def apply(self, a: Action) -> tuple[bool, str]:
        """Run one action on the device. Returns (valid, reason-if-invalid)."""
        ok, why = self._apply(a)
        if ok:
            self.invalidate()
        if self._toast_ttl > 0:
            self._toast_ttl -= 1
            if self._toast_ttl == 0:
                self.toast_text = ""
                self.invalidate()
        return ok, why

    def _apply(self, a: Action) -> tuple[bool, str]:
        t = a.type
        if t in ("click", "long_press"):
            if a.x is None and a.element is None and a.text is not None:
                # by label: the element the text names on this screen (core/labels.py)
                idx = resolve_label(a.text, screen_elements(self.screen()))
                if idx is None:
                    return False, f"no element labelled {a.text!r} on this screen"
                a = a.replace(element=idx)
            if a.element is not None and a.x is None:
                # element index = a tap at the centre of that UI element (as Set-of-Mark agents do)
                flat = self.screen().flat
                if not 0 <= int(a.element) < len(flat):
                    return False, f"element {a.element} does not exist ({len(flat)} elements)"
                x1, y1, x2, y2 = flat[int(a.element)].bounds
                px, py = (x1 + x2) / 2, (y1 + y2) / 2
            else:
                px, py = float(a.x), float(a.y)
            if not (0 <= px < W and 0 <= py < H):
                return False, f"point ({px:.0f},{py:.0f}) is off screen"
            node = self.hit(px, py) if t == "click" else self._long_hit(px, py)
            if node is None:
                return False, f"no {'clickable' if t == 'click' else 'long-clickable'} widget at ({px:.0f},{py:.0f})"
            if t == "click":
                if node.on_point is not None:
                    node.on_point(px, py)
                elif node.on_click is not None:
                    node.on_click()
                else:
                    return False, "element is not clickable"
            else:
                if node.on_long is None:
                    return False, "element has no long-press action"
                node.on_long()
            return True, ""
        if t == "scroll":
            return self.scroll(a.direction)
        if t == "swipe":
            dx, dy = a.x2 - a.x, a.y2 - a.y
            scr = self.screen()
            if abs(dx) > abs(dy) or scr.scroll_node is None:
                return False, "swipe moves nothing here"
            x1, y1, x2, y2 = scr.scroll_node.bounds
            if not (x1 <= a.x < x2 and y1 <= a.y < y2):
                return False, "swipe starts outside the scrollable area"
            return self.scroll("down" if dy < 0 else "up", int(abs(dy)))
        if t == "type":
            ref = self.top
            if self.focus is None or self.focus[0] != id(ref):
                return False, "no focused text field"
            key = self.focus[1]
            ref.form[key] = str(ref.form.get(key, "")) + a.text
            return True, ""
        if t in ("key", "system_button"):
            name = (a.text if t == "key" else a.button).strip().lower()
            if name == "back":
                self.back()
            elif name == "home":
                self.home()
            elif name == "enter":
                if self.focus is None:
                    return False, "Enter with no focused field"
                submit, self.focus = self._submit, None
                if submit is not None:
                    submit()
            elif name in ("del", "delete", "backspace") and self.focus is not None:
                ref, key = self.top, self.focus[1]
                ref.form[key] = str(ref.form.get(key, ""))[:-1]
            else:
                return False, f"key {name!r} does nothing here"
            return True, ""
        if t == "open":
            key = self.find_app(a.text)
            if key is None:
                return False, f"no app named {a.text!r}"
            self.open_app(key)
            return True, ""
        if t == "wait":
            return True, ""
        return True, ""  # answer / terminate are handled by PhoneSim

    def _long_hit(self, x, y):
        scr = self.screen()
        for node in reversed(scr.flat):
            x1, y1, x2, y2 = node.bounds
            if node.on_long is not None and x1 <= x < x2 and y1 <= y < y2:
                return node
        return self.hit(x, y)
