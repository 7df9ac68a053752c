"""Page builder for PhoneSim apps: describe a page, get a laid-out `Screen`.

Apps never place widgets by hand: they call `UI.appbar`, vertically stacked body items (`row`,
`switch`, `field`, `button`, ...), `fab` and dialogs; `UI.finish()` lays the page out, applies the
body's scroll offset, drops items outside the viewport and clips partly visible ones (uiautomator
reports visible bounds).
"""

from __future__ import annotations

from typing import Callable, Optional

from gui_jax.envs.sim.widgets import (
    APPBAR_H,
    BODY_TOP,
    KEYBOARD_H,
    PAD,
    STATUS_H,
    Dialog,
    H,
    Node,
    PageRef,
    Screen,
    W,
    clip_tree,
    flatten,
)


def _wid(pkg: str, name: str) -> str:
    return f"com.phonesim.{pkg}:id/{name}" if name else ""


class UI:
    """Page builder: call appbar/row/switch/field/... then `finish()` to get the Screen."""

    def __init__(self, dev, ref: PageRef, pkg: str, dark: bool = False):
        self.dev, self.ref, self.pkg, self.dark = dev, ref, pkg, dark
        self.items: list[tuple[int, Callable[[int], Node]]] = []
        self.bar: list[Node] = []
        self.fab_node: Optional[Node] = None
        self.title = ""

    def rid(self, name: str) -> str:
        return _wid(self.pkg, name)

    # ---- fixed chrome -------------------------------------------------------------------
    def appbar(self, title: str, back: bool = True, actions=()) -> None:
        """actions: [(label, fn, rid)]; label starting with '+', '*', 'x' is drawn as an icon."""
        self.title = title
        y1, y2 = STATUS_H, STATUS_H + APPBAR_H
        x = PAD
        if back:
            self.bar.append(
                Node(
                    "android.widget.ImageButton",
                    "icon_back",
                    (0, y1, 150, y2),
                    desc="Navigate up",
                    rid=self.rid("back"),
                    on_click=self.dev.up,
                    focusable=True,
                )
            )
            x = 160
        xr = W - 20
        acts = []
        for label, fn, rid in reversed(list(actions)):
            w = max(150, 44 * len(label) + 60)
            acts.append(
                Node(
                    "android.widget.Button",
                    "bar_button",
                    (xr - w, y1 + 20, xr, y2 - 20),
                    text=label,
                    rid=self.rid(rid),
                    on_click=fn,
                    focusable=True,
                )
            )
            xr -= w + 10
        self.bar.append(Node("android.widget.TextView", "title", (x, y1, xr, y2), text=title, rid=self.rid("title")))
        self.bar.extend(reversed(acts))

    def fab(self, label: str, fn, rid: str = "fab") -> None:
        self.fab_node = Node(
            "android.widget.ImageButton",
            "fab",
            (820, 2120, 1020, 2320),
            desc=label,
            rid=self.rid(rid),
            on_click=fn,
            focusable=True,
        )

    # ---- body items ---------------------------------------------------------------------
    def _add(self, h: int, make: Callable[[int], Node]) -> None:
        self.items.append((h, make))

    def row(
        self,
        title: str,
        sub: str = "",
        on_click=None,
        rid: str = "",
        right: str = "",
        on_long=None,
        icon: str = "",
        checkbox=None,
    ) -> None:
        """List row. checkbox=(checked, fn, desc) adds a CheckBox at the left."""
        h = 190 if sub else 150

        def make(y):
            x0 = PAD
            kids = []
            if checkbox is not None:
                checked, fn, cdesc = checkbox
                kids.append(
                    Node(
                        "android.widget.CheckBox",
                        "checkbox",
                        (PAD, y + h // 2 - 50, PAD + 100, y + h // 2 + 50),
                        desc=cdesc,
                        rid=self.rid("checkbox"),
                        on_click=fn,
                        checkable=True,
                        checked=checked,
                        focusable=True,
                    )
                )
                x0 = PAD + 130
            elif icon:
                kids.append(
                    Node(
                        "android.widget.ImageView",
                        "avatar",
                        (PAD, y + h // 2 - 55, PAD + 110, y + h // 2 + 55),
                        desc="",
                        text="",
                        style={"letter": icon},
                    )
                )
                x0 = PAD + 140
            xr = W - PAD - (260 if right else 0)
            if sub:
                kids.append(
                    Node(
                        "android.widget.TextView",
                        "row_title",
                        (x0, y + 25, xr, y + 105),
                        text=title,
                        rid=self.rid("item_title"),
                    )
                )
                kids.append(
                    Node(
                        "android.widget.TextView",
                        "row_sub",
                        (x0, y + 110, xr, y + 170),
                        text=sub,
                        rid=self.rid("item_subtitle"),
                    )
                )
            else:
                kids.append(
                    Node(
                        "android.widget.TextView",
                        "row_title",
                        (x0, y + 35, xr, y + 115),
                        text=title,
                        rid=self.rid("item_title"),
                    )
                )
            if right:
                kids.append(
                    Node(
                        "android.widget.TextView",
                        "row_right",
                        (W - PAD - 250, y + 35, W - PAD, y + 115),
                        text=right,
                        rid=self.rid("item_value"),
                    )
                )
            return Node(
                "android.widget.LinearLayout",
                "row",
                (0, y, W, y + h),
                rid=rid and self.rid(rid),
                on_click=on_click,
                on_long=on_long,
                children=kids,
                focusable=on_click is not None,
            )

        self._add(h, make)

    def switch(self, label: str, checked: bool, fn, rid: str, on_row=None) -> None:
        """Label + Switch. The row toggles too, unless on_row (e.g. open details) is given."""
        h = 170

        def make(y):
            kids = [Node("android.widget.TextView", "row_title", (PAD, y + 45, 800, y + 125), text=label)]
            kids.append(
                Node(
                    "android.widget.Switch",
                    "switch",
                    (860, y + 45, 1040, y + 125),
                    text="ON" if checked else "OFF",
                    desc=label,
                    rid=self.rid(rid),
                    on_click=fn,
                    checkable=True,
                    checked=checked,
                    focusable=True,
                )
            )
            return Node(
                "android.widget.LinearLayout",
                "row",
                (0, y, W, y + h),
                on_click=on_row or fn,
                children=kids,
                rid=self.rid(rid + "_row"),
            )

        self._add(h, make)

    def field(self, label: str, key: str, hint: str = "", on_submit=None) -> None:
        """Single-line text input bound to ref.form[key]; clicking focuses it."""
        h = 230
        ref, dev = self.ref, self.dev

        def make(y):
            value = str(ref.form.get(key, ""))
            focused = dev.focus == (id(ref), key)
            kids = [Node("android.widget.TextView", "label", (PAD, y + 10, W - PAD, y + 70), text=label)]
            box = (PAD, y + 75, W - PAD, y + 205)
            edit = Node(
                "android.widget.EditText",
                "edit",
                box,
                text=value,
                rid=self.rid(key),
                on_click=lambda: dev.set_focus(ref, key, on_submit),
                focusable=True,
                focused=focused,
                long_clickable=True,
                style={"hint": hint or label},
                on_long=lambda: dev.paste_into(ref, key),
            )
            kids.append(edit)
            if value:
                kids.append(
                    Node(
                        "android.widget.ImageButton",
                        "icon_clear",
                        (W - PAD - 130, y + 90, W - PAD - 20, y + 190),
                        desc=f"Clear {label}",
                        rid=self.rid(f"clear_{key}"),
                        on_click=lambda: ref.form.__setitem__(key, ""),
                    )
                )
            return Node("android.widget.LinearLayout", "group", (0, y, W, y + h), children=kids)

        self._add(h, make)

    def button(self, label: str, fn, rid: str, primary: bool = True) -> None:
        h = 170

        def make(y):
            return Node(
                "android.widget.Button",
                "button" if primary else "button2",
                (PAD, y + 25, W - PAD, y + 145),
                text=label,
                rid=self.rid(rid),
                on_click=fn,
                focusable=True,
            )

        self._add(h, make)

    def text(self, text: str, rid: str = "", size: str = "body", copy: bool = False) -> None:
        h = {"body": 110, "big": 260, "header": 100, "small": 90}[size]
        dev = self.dev

        def make(y):
            on_long = (lambda: dev.copy(text)) if copy else None
            return Node(
                "android.widget.TextView",
                "text_" + size,
                (PAD, y, W - PAD, y + h),
                text=text,
                rid=self.rid(rid),
                on_long=on_long,
            )

        self._add(h, make)

    def detail(self, label: str, value: str, rid: str) -> None:
        """Label/value pair; long-press the value to copy it."""
        h = 190
        dev = self.dev

        def make(y):
            kids = [
                Node("android.widget.TextView", "label", (PAD, y + 20, W - PAD, y + 75), text=label),
                Node(
                    "android.widget.TextView",
                    "value",
                    (PAD, y + 80, W - PAD, y + 170),
                    text=value,
                    rid=self.rid(rid),
                    on_long=lambda: dev.copy(value),
                ),
            ]
            return Node("android.widget.LinearLayout", "group", (0, y, W, y + h), children=kids)

        self._add(h, make)

    def buttons(self, entries, rid: str = "choices", selected: str = "") -> None:
        """Horizontal row of toggle buttons: entries [(label, fn)]; `selected` is highlighted."""
        h = 160
        n = max(1, len(entries))

        def make(y):
            w = (W - 2 * PAD - 20 * (n - 1)) // n
            kids = []
            for i, (label, fn) in enumerate(entries):
                x = PAD + i * (w + 20)
                kids.append(
                    Node(
                        "android.widget.Button",
                        "chip",
                        (x, y + 25, x + w, y + 135),
                        text=label,
                        rid=self.rid(f"{rid}_{i}"),
                        on_click=fn,
                        selected=(label == selected),
                        focusable=True,
                    )
                )
            return Node("android.widget.LinearLayout", "group", (0, y, W, y + h), children=kids)

        self._add(h, make)

    def slider(self, label: str, value: int, fn, rid: str) -> None:
        """0..100 slider; a click at x sets round(value to 10). fn(new_value)."""
        h = 220

        def make(y):
            x1, x2 = PAD + 40, W - PAD - 40

            def at(px, py):
                fn(int(round(max(0.0, min(1.0, (px - x1) / (x2 - x1))) * 10)) * 10)

            kids = [
                Node("android.widget.TextView", "label", (PAD, y + 10, W - PAD, y + 80), text=f"{label}: {value}%"),
                Node(
                    "android.widget.SeekBar",
                    "slider",
                    (x1, y + 100, x2, y + 200),
                    text=str(value),
                    desc=label,
                    rid=self.rid(rid),
                    on_point=at,
                    focusable=True,
                ),
            ]
            return Node("android.widget.LinearLayout", "group", (0, y, W, y + h), children=kids)

        self._add(h, make)

    def grid(self, entries, cols: int = 4, rid: str = "icon") -> None:
        """Launcher-style icon grid: entries [(label, letter, color, fn)]."""
        cell_w, cell_h = W // cols, 300
        for r in range(0, len(entries), cols):
            chunk = entries[r : r + cols]

            def make(y, chunk=chunk):
                kids = []
                for i, (label, letter, color, fn) in enumerate(chunk):
                    x = i * cell_w
                    kids.append(
                        Node(
                            "android.widget.TextView",
                            "app_icon",
                            (x + 10, y + 10, x + cell_w - 10, y + cell_h - 10),
                            text=label,
                            desc=label,
                            rid=self.rid(rid),
                            on_click=fn,
                            focusable=True,
                            style={"letter": letter, "color": color},
                        )
                    )
                return Node("android.widget.LinearLayout", "group", (0, y, W, y + cell_h), children=kids)

            self._add(cell_h, make)

    def spacer(self, h: int = 60) -> None:
        self._add(h, lambda y: Node("android.view.View", "spacer", (0, y, W, y + h)))

    # ---- layout -------------------------------------------------------------------------
    def finish(self, app: str, keyboard: bool, toast: str) -> Screen:
        ref = self.ref
        top = BODY_TOP if self.bar else STATUS_H
        bottom = H - KEYBOARD_H if keyboard else H
        view_h = bottom - top
        total = sum(h for h, _ in self.items) + (200 if self.fab_node else 0)
        scroll_max = max(0, total - view_h)
        ref.scroll = min(max(ref.scroll, 0), scroll_max)
        body_kids, y = [], top - ref.scroll
        for h, make in self.items:
            if y >= top and y + h <= bottom:
                body_kids.append(make(y))  # fully visible: nothing to clip
            elif y + h > top and y < bottom:
                n = clip_tree(make(y), top, bottom)
                if n is not None:
                    body_kids.append(n)
            y += h
        body = Node(
            "androidx.recyclerview.widget.RecyclerView" if scroll_max else "android.widget.FrameLayout",
            "body",
            (0, top, W, bottom),
            rid=self.rid("content"),
            children=body_kids,
            scrollable=scroll_max > 0,
        )
        status = Node(
            "android.widget.FrameLayout", "status", (0, 0, W, STATUS_H), rid="com.android.systemui:id/status_bar"
        )
        kids = [status]
        if self.bar:
            kids.append(
                Node(
                    "android.widget.LinearLayout",
                    "appbar",
                    (0, STATUS_H, W, BODY_TOP),
                    rid=self.rid("toolbar"),
                    children=self.bar,
                )
            )
        kids.append(body)
        if self.fab_node is not None and not keyboard:
            kids.append(self.fab_node)
        dialog = ref.dialog is not None
        if dialog:
            kids = [status, self._dialog(ref.dialog, keyboard)]
        root = Node("android.widget.FrameLayout", "root", (0, 0, W, H), children=kids)
        flat = flatten(root)
        return Screen(
            root=root,
            flat=flat,
            app=app,
            scroll_node=body if scroll_max and not dialog else None,
            scroll_max=scroll_max,
            keyboard=keyboard,
            dialog=dialog,
            dark=self.dark,
            toast=toast,
            extra={"title": self.title},
        )

    def _dialog(self, d: Dialog, keyboard: bool) -> Node:
        ref, dev = self.ref, self.dev
        h = 200 + (120 if d.message else 0) + 230 * len(d.fields) + 170
        y1 = (H - KEYBOARD_H - h) // 2 if keyboard else (H - h) // 2
        y1 = max(STATUS_H + 20, y1)
        x1, x2 = 60, W - 60
        kids = [
            Node(
                "android.widget.TextView",
                "dialog_title",
                (x1 + 50, y1 + 50, x2 - 50, y1 + 150),
                text=d.title,
                rid="android:id/alertTitle",
            )
        ]
        y = y1 + 170
        if d.message:
            kids.append(
                Node(
                    "android.widget.TextView",
                    "text_body",
                    (x1 + 50, y, x2 - 50, y + 100),
                    text=d.message,
                    rid="android:id/message",
                )
            )
            y += 120
        for label, key in d.fields:
            focused = dev.focus == (id(ref), key)
            kids.append(
                Node(
                    "android.widget.EditText",
                    "edit",
                    (x1 + 50, y + 40, x2 - 50, y + 180),
                    text=str(ref.form.get(key, "")),
                    rid=self.rid(key),
                    focusable=True,
                    focused=focused,
                    on_click=lambda key=key: dev.set_focus(ref, key, None),
                    style={"hint": label},
                    long_clickable=True,
                    on_long=lambda key=key: dev.paste_into(ref, key),
                )
            )
            y += 230
        n = len(d.buttons)
        bw = (x2 - x1 - 100 - 30 * (n - 1)) // max(n, 1)
        for i, (label, fn) in enumerate(d.buttons):
            bx = x1 + 50 + i * (bw + 30)
            kids.append(
                Node(
                    "android.widget.Button",
                    "dialog_button",
                    (bx, y + 20, bx + bw, y + 140),
                    text=label,
                    rid=f"android:id/button{i + 1}",
                    on_click=fn,
                    focusable=True,
                )
            )
        return Node(
            "android.widget.FrameLayout", "dialog", (x1, y1, x2, y1 + h), rid="android:id/parentPanel", children=kids
        )
