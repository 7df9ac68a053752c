"""PhoneSim's own app pages as pretraining screens: the Messages, Music, Clock and Tasks main pages (the
quickstart's look-up templates), drawn by the apps' real page code, with every label from the generator.

The generic layouts (pretrain_screens.py) stack PhoneSim widgets in arbitrary mixes; these pages are the exact
screens the agent meets, chrome included (app bars, tabs, "New message", "Add alarm", "Clear done", the
screen's bottom edge cutting a long list). Only the content is swapped for labels PhoneSim never uses:
  messages  conversation rows (peer [+ " (new)"], last message)     tap the peer; read the last message
  songs     song rows (title, "artist - m:ss")                       tap the title
  alarms    alarm switches ("07:23  label", minutes never a multiple of 15 as PhoneSim's are)
                                                                     toggle / state of the alarm at a time
  tasks     task rows (checkbox "Done: title", title, "Due …, … priority"; due months never April, PhoneSim's)
                                                                     toggle / state of the task
Goals mix the generic phrasings with the app's own ("Open my conversation with {L}.", "Play the song '{L}'.",
"Turn off the {L} alarm.", "Mark the task '{L}' as done."), always with generator labels.
With page_answers, PhoneSim's answer questions too (ANSWER_GOALS), on Messages and on a fifth page:
  expenses  expense rows (name, category, amount)                    read the amount
With part_answers, the questions whose answer is part of a row's second line (PART_GOALS):
  songs     "Who is the artist of the song '{L}'?"                    the artist of "artist - m:ss"
  tasks     "What is the priority of the task '{L}'?"                 the word before "priority" in "Due …, … priority"
"""
from __future__ import annotations

from typing import Callable, Optional

import functools

import numpy as np

from gui_jax.envs.sim.apps.base import money
from gui_jax.envs.sim.apps.clock import Alarm, Clock
from gui_jax.envs.sim.apps.expenses import CATEGORIES, Expense, Expenses
from gui_jax.envs.sim.apps.messages import Messages, Thread
from gui_jax.envs.sim.apps.music import Music, Song
from gui_jax.envs.sim.apps.todo import PRIORITIES, Tasks, Todo
from gui_jax.envs.sim.ui import UI
from gui_jax.envs.sim.widgets import PageRef
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.pretrain_labels import DEFAULT_LABEL_KINDS, LabelPool, contains_label
from gui_jax.train.pretrain_screens import (ScreenBuilder, Slot, StubDevice, SynthScreen, child_node, finish_screen,
                                            draw_kind, lines_of, text_kinds, token_share)

APP_PAGES = ("messages", "songs", "alarms", "tasks")
# objective need → app pages with slots of that kind
APP_SERVES = {"tap": ("messages", "songs"), "read": ("messages",), "state": ("alarms", "tasks"),
              "toggle": ("alarms", "tasks")}
# pages (need → pages) that only page_answers adds: the stream without it is unchanged
ANSWER_SERVES = {"read": ("expenses",)}
# (fixed UI lines of the page's chrome, lines per item, (min, max) items as PhoneSim populates the app)
_SHAPE = {"messages": (2, 2, (4, 7)), "songs": (3, 2, (10, 16)), "alarms": (5, 2, (3, 6)), "tasks": (3, 3, (6, 10)),
          "expenses": (3, 3, (7, 12))}
MAX_PAGE_LINES = 34   # the most UI lines a page shows (Tasks: 10 rows of 3 lines + chrome; the screen cuts more)
# peers: names, and made-up words from the tokenizer's pieces, so a peer's rare tokens are looked up too
PEER_KINDS = {"name": 0.5, "words": 0.2, "pieces": 0.3}
_PHONESIM_MINUTES = (0, 15, 30, 45)   # Clock.populate's alarm minutes: pretraining alarms never use them
_PHONESIM_DUE_MONTH = 4               # Tasks.populate's due month (YYYY-04-DD)
# The goals each page poses, in the apps' own phrasings, by the launcher's app label ({L}: the row's label; the
# alarm's time). Launch items with launch_goals="pages" pose them on the home screen too, where the answer is
# opening the app: trained only on their pages, the phrasings drew clicks there (experiments/results/pretrain_m1.md);
# "answers" poses the pages' answer questions there as well (launch_page_goals).
PAGE_GOALS = {"Messages": ("Open my conversation with {L}.", "What is the last message from {L}?"),
              "Music": ("Play the song '{L}'.",),
              "Clock": ("Turn off the {L} alarm.", "Turn on the {L} alarm."),
              "Tasks": ("Mark the task '{L}' as done.", "Mark the task '{L}' as not done.")}
# page_answers: the read questions PhoneSim's answer templates ask of a page, added to its read phrasings (answer
# steps read zero-shot in 14-20 of 275, and messages.last_message's phrasing in none: experiments/results/pretrain_m1.md)
ANSWER_GOALS = {"messages": ("What did {L} say in their most recent message?",),
                "expenses": ("How much did I spend on '{L}'?",)}


# part_answers: PhoneSim's answer questions whose answer is a part of a row's second line (music.artist, tasks.priority:
# answered with the whole line they fail PhoneSim's check, 0-3 of 24 priorities after the quickstart's RL)
PART_GOALS = {"songs": ("Who is the artist of the song '{L}'?",),
              "tasks": ("What is the priority of the task '{L}'?",)}
PART_SERVES = {"read": ("songs", "tasks")}
# the launcher's label of each page's app (the apps' own)
PAGE_APP = {"messages": Messages.label, "songs": Music.label, "alarms": Clock.label, "tasks": Tasks.label,
            "expenses": Expenses.label}


@functools.lru_cache(maxsize=None)
def launch_page_goals(with_answers: bool = False) -> dict[str, tuple[str, ...]]:
    """App label → the goals its pretraining pages pose, for launch items on the home screen: PAGE_GOALS, and with
    `with_answers` also the answer questions the pages ask (ANSWER_GOALS, PART_GOALS), so that a question whose
    page only ever answered it also opens its app there."""
    if not with_answers:
        return PAGE_GOALS
    out = dict(PAGE_GOALS)
    for page, goals in (*ANSWER_GOALS.items(), *PART_GOALS.items()):
        out[PAGE_APP[page]] = out.get(PAGE_APP[page], ()) + tuple(goals)
    return out


@functools.lru_cache(maxsize=None)
def app_serves(page_answers: bool = False, part_answers: bool = False) -> dict:
    """need → app pages that serve it: APP_SERVES, with page_answers ANSWER_SERVES' pages and with part_answers
    PART_SERVES' pages after them (one dict per setting)."""
    extra = [d for d, on in ((ANSWER_SERVES, page_answers), (PART_SERVES, part_answers)) if on]
    if not extra:
        return APP_SERVES
    return {need: APP_SERVES.get(need, ()) + sum((d.get(need, ()) for d in extra), ())
            for need in {*APP_SERVES, *ANSWER_SERVES, *PART_SERVES}}


def peer_kinds(kinds: dict) -> dict:
    """Label kinds of Messages peers: PEER_KINDS, with `tokens` at its share of `kinds` when that has it."""
    share = token_share(kinds)
    if share <= 0:
        return PEER_KINDS
    return {**PEER_KINDS, "tokens": sum(PEER_KINDS.values()) * share / (1.0 - share)}


def _esc(text: str) -> str:
    """A literal for str.format (labels go into the slots' format strings)."""
    return text.replace("{", "{{").replace("}", "}}")


def alarm_time(rng: np.random.Generator, hour: Optional[int] = None, minute: Optional[int] = None) -> str:
    while minute is None or minute in _PHONESIM_MINUTES:
        minute = int(rng.integers(60))
    return f"{int(rng.integers(24)) if hour is None else hour:02d}:{minute:02d}"


def _rows(screen) -> dict[str, object]:
    """Row nodes on screen by their title text (a clipped row keeps its title only when it is visible)."""
    out = {}
    for node in screen.root.walk():
        title = next((x for x in node.walk() if x.kind == "row_title"), None) if node.kind == "row" else None
        if title is not None:
            out[title.text] = node
    return out


def _messages(b: ScreenBuilder, k: int):
    app = Messages(StubDevice())
    peers = [b.target] + [b.label(peer_kinds(b.kinds)) for _ in range(k - 1)]
    for peer in peers:
        app.threads.append(Thread(app.new_id(), peer, [("them", b.value("phrase"))], b.chance(0.4)))
    order = b.rng.permutation(k)
    app.threads = [app.threads[int(j)] for j in order]

    def slots(screen):
        rows, out = _rows(screen), []
        for t in app.threads:
            shown = t.peer + (" (new)" if t.unread else "")
            row = rows.get(shown)
            if row is None:
                continue
            title, sub = child_node(row, "row_title"), child_node(row, "row_sub")
            s = Slot(t.peer, [(title, "text", "{}" + _esc(shown[len(t.peer):]))], tap=title,
                     goals={"tap": PAGE_GOALS["Messages"][:1], "read": PAGE_GOALS["Messages"][1:]})
            if sub is not None:
                s.value, s.value_kind, s.value_node, s.where = t.messages[-1][1], "phrase", sub, "below"
            out.append(s)
        return out
    return app, slots


def _songs(b: ScreenBuilder, k: int):
    app = Music(StubDevice())
    titles = [b.target] + [b.label(text_kinds(b.kinds)) for _ in range(k - 1)]
    artists = [b.value("name") for _ in range(3)]
    for title in sorted(titles, key=str.lower):   # PhoneSim lists songs by title
        app.songs.append(Song(app.new_id(), title, artists[int(b.rng.integers(3))], int(b.rng.integers(90, 400))))

    def slots(screen):
        rows = _rows(screen)
        return [Slot(s.title, [(child_node(rows[s.title], "row_title"), "text", "{}")],
                     tap=child_node(rows[s.title], "row_title"), goals={"tap": PAGE_GOALS["Music"]})
                for s in app.songs if s.title in rows]
    return app, slots


def _alarms(b: ScreenBuilder, k: int):
    app = Clock(StubDevice())
    hour, minute = (int(x) for x in b.target.split(":"))
    times, used = [b.target], {b.target}
    while len(times) < k:   # with the shared-word probability a distractor shares the target's hour or minutes
        shared = b.chance(b.share)
        by_hour = b.chance(0.5)
        t = alarm_time(b.rng, hour if shared and by_hour else None, minute if shared and not by_hour else None)
        if t not in used:
            used.add(t)
            times.append(t)
    for t in times:
        h, m = (int(x) for x in t.split(":"))
        app.alarms.append(Alarm(app.new_id(), h, m, b.label(text_kinds(b.kinds)), b.chance(0.6)))
    app.alarms.sort(key=lambda a: (a.hour, a.minute))

    def slots(screen):
        out = []
        for node in screen.root.walk():
            switch = child_node(node, "switch") if node.kind == "row" else None
            a = next((a for a in app.alarms if switch is not None and switch.desc == f"{a.time}  {a.label}"), None)
            if a is None:
                continue
            fmt = "{}  " + _esc(a.label)
            phrase = PAGE_GOALS["Clock"][0 if a.enabled else 1]
            out.append(Slot(a.time, [(child_node(node, "row_title"), "text", fmt), (switch, "desc", fmt)],
                            state=a.enabled, state_kind="switch", toggle=switch, goals={"toggle": (phrase,)}))
        return out
    return app, slots


def _tasks(b: ScreenBuilder, k: int):
    app = Tasks(StubDevice())
    titles = [b.target] + [b.label(text_kinds(b.kinds)) for _ in range(k - 1)]
    months = [m for m in range(1, 13) if m != _PHONESIM_DUE_MONTH]
    for j in b.rng.permutation(k):
        due = f"2026-{months[int(b.rng.integers(len(months)))]:02d}-{int(b.rng.integers(1, 29)):02d}"
        app.items.append(Todo(app.new_id(), titles[int(j)], due, PRIORITIES[int(b.rng.integers(len(PRIORITIES)))],
                              b.chance(0.35)))

    def slots(screen):
        rows = _rows(screen)
        out = []
        for t in app.items:
            row = rows.get(t.title)
            box = child_node(row, "checkbox") if row is not None else None
            if box is None:
                continue
            phrase = PAGE_GOALS["Tasks"][1 if t.done else 0]
            out.append(Slot(t.title, [(child_node(row, "row_title"), "text", "{}"), (box, "desc", "Done: {}")],
                            state=t.done, state_kind="checkbox", toggle=box, goals={"toggle": (phrase,)}))
        return out
    return app, slots


def _expenses(b: ScreenBuilder, k: int):
    app = Expenses(StubDevice())
    names = [b.target] + [b.label(text_kinds(b.kinds)) for _ in range(k - 1)]
    for j in b.rng.permutation(k):
        amount = float(b.value("price")[1:].replace(",", ""))
        app.items.append(Expense(app.new_id(), names[int(j)], amount, CATEGORIES[int(b.rng.integers(len(CATEGORIES)))]))

    def slots(screen):
        rows = _rows(screen)
        return [Slot(e.name, [(child_node(rows[e.name], "row_title"), "text", "{}")], value=money(e.amount),
                     value_kind="price", value_node=child_node(rows[e.name], "row_right"), where="beside")
                for e in app.items if e.name in rows]
    return app, slots


def _part_values(page: str, app, screen, slots: list) -> None:
    """part_answers: each song's / task's slot reads the artist / priority inside its row's second line."""
    rows = _rows(screen)
    parts = ({x.title: x.artist for x in app.songs} if page == "songs" else {x.title: x.priority for x in app.items})
    for s in slots:
        sub = child_node(rows[s.label], "row_sub") if s.label in rows else None
        if sub is not None and contains_label(sub.text, parts[s.label]):
            s.value, s.value_kind, s.value_node, s.where = parts[s.label], "part", sub, "part"
            s.goals = {**s.goals, "read": PART_GOALS[page]}


_PAGES: dict[str, Callable] = {"messages": _messages, "songs": _songs, "alarms": _alarms, "tasks": _tasks,
                               "expenses": _expenses}


def build_app_screen(rng: np.random.Generator, pool: LabelPool, cfg: PromptConfig, *, page: str, need: str,
                     n_lines: int, shared_word_prob: float = 0.0, label_kinds: Optional[dict] = None,
                     max_tries: int = 50, with_others: bool = False, page_answers: bool = False,
                     token_values: float = 0.0, part_answers: bool = False) -> SynthScreen:
    """PhoneSim's `page` (messages | songs | alarms | tasks; expenses with page_answers) with a target slot serving
    `need`, its items as many as fit `n_lines` UI lines (at least 2, at most as many as PhoneSim populates); the
    screen's bottom edge cuts a longer list as PhoneSim's does (at most MAX_PAGE_LINES lines), so it shows about
    n_lines lines or fewer. page_answers: reads are also asked in ANSWER_GOALS' phrasings. token_values: the share
    of message texts written as token-word sentences (ScreenBuilder.value). part_answers: songs and tasks are also
    read, their answer part of a row's line (PART_GOALS)."""
    if page not in app_serves(page_answers, part_answers).get(need, ()):
        flag = ("page_answers" if page in ANSWER_SERVES.get(need, ()) else
                "part_answers" if page in PART_SERVES.get(need, ()) else "")
        raise ValueError(f"app page {page!r} cannot serve objective need {need!r}"
                         + (f" (without {flag})" if flag else ""))
    kinds = dict(label_kinds or DEFAULT_LABEL_KINDS)
    chrome, per_item, (lo, hi) = _SHAPE[page]
    k = int(min(max((n_lines - chrome) // per_item, 2), hi))   # 2: short curriculum stages
    for _ in range(max_tries):
        if page == "alarms":
            target = alarm_time(rng)
        elif rng.random() < shared_word_prob:
            target, kind = pool.multiword_label(rng, token_share(kinds))
        else:
            kind = draw_kind(rng, peer_kinds(kinds) if page == "messages" else text_kinds(kinds))
            target = pool.label(rng, kind)
        b = ScreenBuilder(rng, pool, cfg, n_lines, target, shared_word_prob, kinds,
                          None if page == "alarms" else kind, token_values)
        app, slots = _PAGES[page](b, k)
        b.ui = UI(StubDevice(), PageRef(app.key, "main"), app.key)
        app.page_main(b.ui, b.ui.ref)
        screen = b.ui.finish(app.key, keyboard=False, toast="")
        b.slots, b.n = slots(screen), lines_of(screen, cfg)
        if part_answers and need == "read" and page in PART_GOALS:   # tap / toggle items stay as without it
            _part_values(page, app, screen, b.slots)
        for s in b.slots if page_answers else ():
            if s.value_node is not None:
                s.goals = {**s.goals, "read": tuple(s.goals.get("read", ())) + ANSWER_GOALS.get(page, ())}
        target_slot = next((s for s in b.slots if s.label == target), None)
        done = finish_screen(b, screen, page, need, cfg, with_others, target_slot) if target_slot else None
        if done is not None:
            return done
    raise RuntimeError(f"no {page} page with a unique {need} target in {max_tries} tries")
