"""Synthetic phone screens for pretraining, laid out with PhoneSim's own page builder (envs/sim/ui.py).

A screen is built from generic layouts (lists, settings toggles, checklists, forms, dialogs, tabs, grids,
label/value details, home screens with an arbitrary app set), with every text slot filled by the label
generator (train/pretrain_labels.py). Widgets come from PhoneSim's `UI` (rows, switches, fields, chips,
icons, dialogs), so the UI text the agent reads has PhoneSim's exact element structure ("[9] ; Title",
"[10] click,check,on; Title ON", containers, "Navigate up"); only the stacking differs: items are laid out
on one tall page (no scrolling), so a screen can show up to 40 lines.

`build_screen` makes a screen with exactly `n_lines` UI-text lines (under the prompt configuration's
filters) and one target slot of the kind an objective needs; the target's label occurs in no other line.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import numpy as np

from gui_jax.core.types import Observation
from gui_jax.envs.sim.ui import UI
from gui_jax.envs.sim.uixml import screen_elements
from gui_jax.envs.sim.widgets import BODY_TOP, STATUS_H, Dialog, H, Node, PageRef, Screen, W, flatten
from gui_jax.rl.prompting import PromptConfig, element_label_text, shown_elements
from gui_jax.train.pretrain_labels import DEFAULT_LABEL_KINDS, VALUE_KINDS, LabelPool, contains_label

LAYOUTS = ("list", "settings", "checklist", "form", "dialog", "tabs", "grid", "details", "home")
# objective need → layouts that have slots of that kind
SERVES = {"tap": ("list", "settings", "form", "dialog", "tabs", "grid", "details"),
          "read": ("list", "settings", "checklist", "form", "details"),
          "state": ("settings", "checklist", "tabs"),
          "toggle": ("settings", "checklist"),
          "home": ("home",)}
MIN_LINES, MAX_LINES = 3, 40
LINE_RANGE = {"dialog": (3, 9)}  # (min, max) UI lines a layout can show; others MIN_LINES..MAX_LINES
# label kinds where numbers or prices would read oddly (icons, buttons)
NAME_KINDS = {"words": 0.8, "name": 0.2}
BUTTON_KINDS = {"words": 0.7, "phrase": 0.3}
TOKEN_VALUE_KINDS = ("phrase", "words")  # values that token_values may write as token-word sentences
BLANK = np.zeros((8, 4, 3), np.uint8)  # the UI-text agent reads no pixels; Observation wants an image
APP = "pretrain"


# fewest UI lines a layout needs to show a slot an objective can target, under ui_text_skip_unlabeled
# (app-bar title + the smallest such item; e.g. a checklist row with a value below: checkbox, title, value)
_MIN_NEED = {("list", "tap"): 2, ("list", "read"): 3, ("settings", "tap"): 2, ("settings", "read"): 3,
             ("settings", "state"): 3, ("settings", "toggle"): 3, ("checklist", "read"): 4, ("checklist", "state"): 3,
             ("checklist", "toggle"): 3, ("form", "tap"): 2,
             ("form", "read"): 4, ("dialog", "tap"): 3, ("tabs", "tap"): 2, ("tabs", "state"): 2,
             ("grid", "tap"): 2, ("details", "tap"): 2, ("details", "read"): 3, ("home", "home"): 3}
_ROW_LAYOUTS = ("list", "settings", "checklist")  # their targets sit in clickable row containers


def layout_range(layout: str, need: str, cfg: PromptConfig) -> tuple[int, int]:
    """(min, max) UI lines `layout` can show with a target for `need` under `cfg`."""
    lo = _MIN_NEED[(layout, need)]
    if not cfg.ui_text_skip_unlabeled and layout in _ROW_LAYOUTS:
        lo += 1  # the row container (clickable, no label) is a line of its own
    return max(lo, MIN_LINES), LINE_RANGE.get(layout, (MIN_LINES, MAX_LINES))[1]


@dataclasses.dataclass
class Slot:
    """One labelled thing on a screen and what an objective can ask about it."""
    label: str
    label_nodes: list            # [(Node, attribute, format)]: where the label is written ("Done: {}")
    tap: Optional[Node] = None   # element a "Tap <label>" goal clicks (its only label line)
    value: str = ""              # the value shown with the label, for read questions
    value_kind: str = ""
    value_node: Optional[Node] = None
    where: str = ""              # below | beside | field: where the value sits
    state: Optional[bool] = None  # on / checked / selected
    state_kind: str = ""          # switch | checkbox | tab
    toggle: Optional[Node] = None  # the switch / checkbox a "Turn off <label>" goal clicks
    # need → the app's own goal phrasings ("Play the song '{L}'.") added to the generic ones (app pages only)
    goals: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class SynthScreen:
    """A built screen and its target slot (element indices refer to observation.ui_elements)."""
    observation: Observation
    layout: str
    target: Slot
    label_element: int            # the target's first label element
    tap_element: Optional[int]
    value_element: Optional[int]
    n_lines: int                  # UI-text lines the prompt shows
    # other slots serving the same need whose labels are also unique on screen, with their (label, tap, value)
    # elements: more goals about the same screen (dense supervision)
    others: tuple = ()


class StubDevice:
    """What PhoneSim's UI builder asks of a device; nothing is ever clicked here."""
    focus = None

    def __getattr__(self, name):  # up, set_focus, paste_into, copy, close_dialog, ...
        return lambda *a, **k: None


def _noop():
    return None


def _shown(n: Node, cfg: PromptConfig) -> bool:
    """prompting.visible_elements + ui_text_skip_unlabeled, on a widget node."""
    labelled = bool(n.text or n.desc)
    interactive = (n.clickable or n.long_clickable or n.scrollable or n.checkable or n.checked or n.focusable
                   or n.selected or n.password)
    return (interactive or labelled) and (labelled or not cfg.ui_text_skip_unlabeled)


def _lines(nodes, cfg: PromptConfig) -> int:
    return sum(_shown(x, cfg) for n in nodes for x in n.walk())


def lines_of(screen: Screen, cfg: PromptConfig) -> int:
    """UI-text lines a whole screen shows under `cfg`."""
    return _lines([screen.root], cfg)


def text_kinds(kinds: dict) -> dict:
    """The word-like label kinds of `kinds` (titles of songs, tasks, alarms), else NAME_KINDS."""
    out = {k: w for k, w in kinds.items() if k in ("words", "name", "phrase", "pieces", "tokens")}
    return out or dict(NAME_KINDS)


def draw_kind(rng: np.random.Generator, kinds: dict) -> str:
    """One key of `kinds` ({kind: weight}) drawn by weight (one rng.choice call)."""
    names = list(kinds)
    p = np.asarray([kinds[k] for k in names], float)
    return names[int(rng.choice(len(names), p=p / p.sum()))]


def token_share(kinds: dict) -> float:
    """The share of `tokens` labels among `kinds` (0 without it): the share of shared-word targets drawn as
    token words (LabelPool.multiword_label)."""
    return float(kinds.get("tokens", 0.0)) / float(sum(kinds.values()))


def child_node(node: Node, kind: str) -> Optional[Node]:
    """The first node of `kind` in `node`'s subtree (itself included), else None."""
    return next((x for x in node.walk() if x.kind == kind), None)


class ScreenBuilder:
    """Adds PhoneSim widgets to a tall page within a UI-line budget, drawing labels and recording slots."""

    def __init__(self, rng, pool: LabelPool, cfg: PromptConfig, n_lines: int, target: str, share: float,
                 kinds: dict, target_kind: Optional[str] = None, token_values: float = 0.0):
        self.rng, self.pool, self.cfg, self.n, self.target, self.share = rng, pool, cfg, n_lines, target, share
        self.kinds, self.target_kind, self.token_values = kinds, target_kind, float(token_values)
        self.ui = UI(StubDevice(), PageRef(APP, "main"), APP)
        self.body: list[Node] = []
        self.slots: list[Slot] = []
        self.lines, self.y = 0, BODY_TOP
        self.used = {target.lower()}

    @property
    def remaining(self) -> int:
        return self.n - self.lines

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def label(self, kinds: Optional[dict] = None) -> str:
        """A fresh label, distinct on this screen; with probability `share` one sharing a word with the target."""
        kinds = kinds or self.kinds
        for _ in range(50):
            lab = self.pool.similar(self.rng, self.target, self.target_kind) if self.chance(self.share) else None
            if lab is None:
                lab = self.pool.label(self.rng, draw_kind(self.rng, kinds))
            if lab.lower() not in self.used:
                self.used.add(lab.lower())
                return lab
        raise RuntimeError("label generator could not find a distinct label")

    def value(self, kind: str) -> str:
        """A value of `kind`; a sentence of token words (LabelPool.token_sentence) in place of a phrase or words
        value with probability token_values (no draw at 0: streams unchanged)."""
        if self.token_values > 0 and kind in TOKEN_VALUE_KINDS and self.chance(self.token_values):
            return self.pool.token_sentence(self.rng)
        return self.pool.value(self.rng, kind)

    def value_kind(self, kinds=VALUE_KINDS) -> str:
        return kinds[int(self.rng.integers(len(kinds)))]

    # ---- adding widgets --------------------------------------------------------------------------------
    def _commit(self, add: Callable[[], None], slots: Callable[[list], list],
                post: Optional[Callable[[list], None]] = None) -> bool:
        """Runs a UI builder call and lays its items out below the page so far (`post` edits the nodes);
        kept, with the slots it shows, if its lines fit the budget."""
        before = len(self.ui.items)
        add()
        new = self.ui.items[before:]
        del self.ui.items[before:]
        nodes, y = [], self.y
        for h, make in new:
            nodes.append(make(y))
            y += h
        if post is not None:
            post(nodes)
        n = _lines(nodes, self.cfg)
        if n > self.remaining:
            return False
        self.body += nodes
        self.slots += slots(nodes)
        self.lines, self.y = self.lines + n, y
        return True

    def filler(self) -> None:
        """One plain text line (any prompt configuration shows a labelled TextView as one line)."""
        text = self.value(self.value_kind(("phrase", "words", "date", "name")))
        self._commit(lambda: self.ui.text(text), lambda nodes: [])

    def appbar(self, back: bool, n_actions: int = 0) -> None:
        acts = [self.label(BUTTON_KINDS) for _ in range(n_actions)]
        self.ui.appbar(self.label(), back=back, actions=[(a, _noop, f"action{k}") for k, a in enumerate(acts)])
        self.lines += _lines(self.ui.bar, self.cfg)
        self.slots += [Slot(b.text, [(b, "text", "{}")], tap=b) for b in self.ui.bar if b.kind == "bar_button"]

    def fab(self) -> None:
        lab = self.label(BUTTON_KINDS)
        self.ui.fab(lab, _noop)
        self.lines += _lines([self.ui.fab_node], self.cfg)
        self.slots.append(Slot(lab, [(self.ui.fab_node, "desc", "{}")], tap=self.ui.fab_node))

    def row(self, sub_kind: str = "", right_kind: str = "") -> bool:
        title = self.label()
        sub = self.value(sub_kind) if sub_kind else ""
        right = self.value(right_kind) if right_kind else ""
        ask_right = bool(right) and (not sub or self.chance(0.5))  # which value a read question asks for

        def slots(nodes):
            t = child_node(nodes[0], "row_title")
            s = Slot(title, [(t, "text", "{}")], tap=t)
            if ask_right:
                s.value, s.value_kind, s.where = right, right_kind, "beside"
                s.value_node = child_node(nodes[0], "row_right")
            elif sub:
                s.value, s.value_kind, s.value_node, s.where = sub, sub_kind, child_node(nodes[0], "row_sub"), "below"
            return [s]
        return self._commit(lambda: self.ui.row(title, sub, on_click=_noop, rid="item", right=right), slots)

    def check_row(self, sub_kind: str) -> bool:
        title, checked = self.label(), self.chance(0.4)
        sub = self.value(sub_kind) if sub_kind else ""

        def slots(nodes):
            box, t = child_node(nodes[0], "checkbox"), child_node(nodes[0], "row_title")
            s = Slot(title, [(t, "text", "{}"), (box, "desc", "Done: {}")], state=checked, state_kind="checkbox",
                     toggle=box)
            if sub:
                s.value, s.value_kind, s.value_node, s.where = sub, sub_kind, child_node(nodes[0], "row_sub"), "below"
            return [s]
        return self._commit(lambda: self.ui.row(title, sub, on_click=_noop, rid="task",
                                                checkbox=(checked, _noop, f"Done: {title}")), slots)

    def switch(self) -> bool:
        lab, on = self.label(), self.chance(0.5)

        def slots(nodes):
            title, switch = child_node(nodes[0], "row_title"), child_node(nodes[0], "switch")
            return [Slot(lab, [(title, "text", "{}"), (switch, "desc", "{}")], state=on, state_kind="switch",
                         toggle=switch)]
        return self._commit(lambda: self.ui.switch(lab, on, _noop, "switch"), slots)

    def field(self, key: str, filled: bool) -> bool:
        lab = self.label()
        kind = self.value_kind(("name", "number", "words", "date", "price"))
        value, hint = (self.value(kind), "") if filled else ("", self.label(BUTTON_KINDS))
        self.ui.ref.form[key] = value

        def show_hint(nodes):  # an empty field reports its hint (PhoneSim keeps it in style only)
            if not filled:
                child_node(nodes[0], "edit").desc = hint

        def slots(nodes):
            t, edit = child_node(nodes[0], "label"), child_node(nodes[0], "edit")
            if not filled:
                return [Slot(lab, [(t, "text", "{}")]), Slot(hint, [(edit, "desc", "{}")], tap=edit)]
            clear = child_node(nodes[0], "icon_clear")
            return [Slot(lab, [(t, "text", "{}"), (clear, "desc", "Clear {}")], value=value, value_kind=kind,
                         value_node=edit, where="field")]
        return self._commit(lambda: self.ui.field(lab, key, hint=hint), slots, show_hint)

    def button(self) -> bool:
        lab = self.label(BUTTON_KINDS)
        return self._commit(lambda: self.ui.button(lab, _noop, "button"),
                            lambda nodes: [Slot(lab, [(nodes[0], "text", "{}")], tap=nodes[0])])

    def detail(self) -> bool:
        lab, kind = self.label(), self.value_kind()
        value = self.value(kind)

        def slots(nodes):
            return [Slot(lab, [(child_node(nodes[0], "label"), "text", "{}")], value=value, value_kind=kind,
                         value_node=child_node(nodes[0], "value"), where="below")]
        return self._commit(lambda: self.ui.detail(lab, value, "detail"), slots)

    def chips(self, k: int) -> bool:
        labs = [self.label(NAME_KINDS) for _ in range(k)]
        sel = labs[int(self.rng.integers(k))]

        def slots(nodes):
            return [Slot(c.text, [(c, "text", "{}")], tap=c, state=c.selected, state_kind="tab")
                    for c in nodes[0].children]
        return self._commit(lambda: self.ui.buttons([(lab, _noop) for lab in labs], rid="tab", selected=sel), slots)

    def icons(self, k: int, cols: int) -> bool:
        labs = [self.label(NAME_KINDS) for _ in range(k)]
        colors = [tuple(int(c) for c in self.rng.integers(40, 220, 3)) for _ in labs]

        def slots(nodes):
            return [Slot(i.text, [(i, "text", "{}"), (i, "desc", "{}")], tap=i) for n in nodes for i in n.children]
        entries = [(lab, lab[0], c, _noop) for lab, c in zip(labs, colors)]
        return self._commit(lambda: self.ui.grid(entries, cols=cols), slots)

    def screen(self) -> Screen:
        """The page as one tall screen: status bar, app bar, every body item, the FAB."""
        ui = self.ui
        top = BODY_TOP if ui.bar else STATUS_H
        bottom = max(H, self.y)
        kids = [Node("android.widget.FrameLayout", "status", (0, 0, W, STATUS_H),
                     rid="com.android.systemui:id/status_bar")]
        if ui.bar:
            kids.append(Node("android.widget.LinearLayout", "appbar", (0, STATUS_H, W, BODY_TOP),
                             rid=ui.rid("toolbar"), children=ui.bar))
        kids.append(Node("android.widget.FrameLayout", "body", (0, top, W, bottom), rid=ui.rid("content"),
                         children=self.body))
        if ui.fab_node is not None:
            kids.append(ui.fab_node)
        root = Node("android.widget.FrameLayout", "root", (0, 0, W, bottom), children=kids)
        return Screen(root=root, flat=flatten(root), app=APP)


# ---- layouts: each fills the builder to exactly its line budget ---------------------------------------
def _fill(b: ScreenBuilder, add: Callable[[], bool]) -> None:
    while b.remaining > 0:
        if not add():
            b.filler()


def _list(b: ScreenBuilder) -> None:
    b.appbar(back=b.n >= 6 and b.chance(0.5), n_actions=min(int(b.rng.integers(3)), max(b.remaining - 4, 0)))
    if b.remaining > 3 and b.chance(0.3):
        b.fab()
    sub_kind = b.value_kind() if b.chance(0.6) else ""
    right_kind = b.value_kind(("price", "time", "date", "percent", "number")) if b.chance(0.5) else ""
    _fill(b, lambda: b.row(sub_kind if b.chance(0.85) else "", right_kind if b.chance(0.85) else ""))


def _settings(b: ScreenBuilder) -> None:
    b.appbar(back=b.n >= 6 and b.chance(0.5))
    kind = b.value_kind(("percent", "number", "words", "time", "name"))
    _fill(b, lambda: b.switch() if b.chance(0.55) else b.row(kind if b.chance(0.7) else ""))


def _checklist(b: ScreenBuilder) -> None:
    b.appbar(back=b.n >= 6 and b.chance(0.3), n_actions=int(b.n >= 8 and b.chance(0.3)))
    kind = b.value_kind(("date", "time", "name", "phrase")) if b.chance(0.8) else ""
    _fill(b, lambda: b.check_row(kind if b.chance(0.9) else ""))


def _form(b: ScreenBuilder) -> None:
    b.appbar(back=b.n >= 6)
    n_buttons = 1 + int(b.chance(0.4))
    keys = iter(range(100))
    _fill(b, lambda: b.button() if b.remaining <= n_buttons else b.field(f"f{next(keys)}", b.chance(0.5)))


def _details(b: ScreenBuilder) -> None:
    b.appbar(back=b.n >= 6)
    n_buttons = int(b.rng.integers(3))
    _fill(b, lambda: b.button() if b.remaining <= n_buttons else b.detail())


def _tabs(b: ScreenBuilder) -> None:
    b.appbar(back=False)
    b.chips(int(min(2 + b.rng.integers(3), b.remaining)))
    sub_kind = b.value_kind() if b.chance(0.4) else ""
    _fill(b, lambda: b.row(sub_kind))


def _grid(b: ScreenBuilder) -> None:
    b.appbar(back=b.n >= 6 and b.chance(0.5))
    cols = 3 + int(b.chance(0.5))
    _fill(b, lambda: b.icons(min(b.remaining, cols), cols))


def _home(b: ScreenBuilder) -> None:
    """PhoneSim's launcher: clock, date, then the app grid (here an arbitrary set of app names)."""
    h, m = int(b.rng.integers(24)), int(b.rng.integers(60))
    b._commit(lambda: (b.ui.spacer(200), b.ui.text(f"{h:02d}:{m:02d}", size="big", rid="clock")), lambda n: [])
    b._commit(lambda: (b.ui.text(b.value("date"), rid="date", size="small"), b.ui.spacer(120)), lambda n: [])
    _fill(b, lambda: b.icons(b.remaining, 4))


def _dialog(b: ScreenBuilder) -> Screen:
    """A dialog alone on screen (PhoneSim hides the page behind it): title, message, fields, buttons."""
    n = b.n
    m = int(b.rng.integers(max(2, n - 5), min(4, n - 1) + 1))
    rest = n - 1 - m
    message = int(rest > 3 or (rest > 0 and b.chance(0.8)))
    fields = [(b.label(BUTTON_KINDS), f"d{k}") for k in range(rest - message)]
    buttons = [b.label(BUTTON_KINDS) for _ in range(m)]
    b.ui.ref.dialog = Dialog(b.label(), b.value("phrase") if message else "",
                             [(lab, _noop) for lab in buttons], fields)
    scr = b.ui.finish(APP, keyboard=False, toast="")
    for node in scr.flat:
        if node.kind == "edit":  # empty fields report their hint
            node.desc = node.style.get("hint", "")
            b.slots.append(Slot(node.desc, [(node, "desc", "{}")], tap=node))
        elif node.kind == "dialog_button":
            b.slots.append(Slot(node.text, [(node, "text", "{}")], tap=node))
    b.lines = _lines([scr.root], b.cfg)
    return scr


_LAYOUT_FNS = {"list": _list, "settings": _settings, "checklist": _checklist, "form": _form, "details": _details,
               "tabs": _tabs, "grid": _grid, "home": _home}


def _eligible(s: Slot, need: str) -> bool:
    if need in ("tap", "home"):
        return s.tap is not None
    if need == "read":
        return s.value_node is not None
    if need == "toggle":
        return s.toggle is not None
    return s.state is not None


def build_screen(rng: np.random.Generator, pool: LabelPool, cfg: PromptConfig, *, layout: str, need: str,
                 n_lines: int, shared_word_prob: float = 0.0, label_kinds: Optional[dict] = None,
                 max_tries: int = 50, with_others: bool = False, token_values: float = 0.0) -> SynthScreen:
    """A screen of `layout` with `n_lines` UI-text lines and a target slot serving `need` (tap | read | state |
    toggle | home), its label unique on screen. Every distractor label shares a word with the target with probability
    `shared_word_prob` (the target then has ≥ 2 words with that probability). with_others: also locate the
    other unique slots (`SynthScreen.others`; a scan of every line per slot, so only when asked). token_values:
    the share of phrase / words values written as token-word sentences (ScreenBuilder.value)."""
    if need not in SERVES or layout not in SERVES[need]:
        raise ValueError(f"layout {layout!r} cannot serve objective need {need!r}")
    lo, hi = layout_range(layout, need, cfg)
    if not lo <= n_lines <= hi:
        raise ValueError(f"n_lines={n_lines} outside [{lo}, {hi}] for layout {layout!r} ({need})")
    kinds = dict(label_kinds or DEFAULT_LABEL_KINDS)
    if layout in ("home", "grid"):
        kinds = NAME_KINDS
    for _ in range(max_tries):
        if rng.random() < shared_word_prob:
            target, kind = pool.multiword_label(rng, token_share(kinds))
        else:
            kind = draw_kind(rng, kinds)
            target = pool.label(rng, kind)
        b = ScreenBuilder(rng, pool, cfg, n_lines, target, shared_word_prob, kinds, kind, token_values)
        scr = _dialog(b) if layout == "dialog" else (_LAYOUT_FNS[layout](b) or b.screen())
        done = finish_screen(b, scr, layout, need, cfg, with_others)
        if done is not None:
            return done
    raise RuntimeError(f"no {layout} screen with a unique {need} target in {max_tries} tries")


def finish_screen(b: ScreenBuilder, scr: Screen, layout: str, need: str, cfg: PromptConfig,
                  with_others: bool = False, target_slot: Optional[Slot] = None) -> Optional[SynthScreen]:
    """The SynthScreen of a built screen: a random eligible slot (or `target_slot`, whose label is already
    the target) gets the target label; None when the target's label is not unique on screen."""
    cands = [s for s in b.slots if _eligible(s, need)]
    if not cands or (target_slot is not None and not any(s is target_slot for s in cands)):
        return None
    slot = target_slot if target_slot is not None else cands[int(b.rng.integers(len(cands)))]
    for node, attr, fmt in slot.label_nodes:  # the target label replaces the slot's own label
        setattr(node, attr, fmt.format(b.target))
    slot.label = b.target
    obs = Observation(screenshot=BLANK, ui_elements=screen_elements(scr), current_app=APP,
                      screen_size=(W, max(H, scr.root.bounds[3])))
    index = {id(n): i for i, n in enumerate(scr.flat)}
    shown = shown_elements(obs, cfg)
    if len(shown) != b.n:  # the line budget and the prompt's own filter must agree
        raise RuntimeError(f"{layout} screen shows {len(shown)} lines, built for {b.n}")
    shown_idx = {e.index for e in shown}

    def locate(s: Slot) -> Optional[tuple[int, Optional[int], Optional[int]]]:
        """(first label, tap, value) elements of a slot whose label names nothing else on screen, else None."""
        own = {index[id(n)] for n, _, _ in s.label_nodes}
        for e in shown:
            if e.index not in own and contains_label(element_label_text(e, cfg), s.label):
                return None
        click = s.toggle if need == "toggle" else s.tap
        tap = index[id(click)] if click is not None else None
        value = index[id(s.value_node)] if s.value_node is not None else None
        if not own <= shown_idx or any(k is not None and k not in shown_idx for k in (tap, value)):
            return None
        return min(own), tap, value

    at = locate(slot)
    if at is None:
        return None
    others = []
    for s in cands if with_others else ():
        if s is not slot and s.label and s.label != slot.label:
            where = locate(s)
            if where is not None:
                others.append((s, *where))
    return SynthScreen(obs, layout, slot, *at, len(shown), tuple(others))
