"""Endless, deterministic, random-access data for pretraining a small base model to read phone screens.

Each item is one synthetic screen (train/pretrain_screens.py, labels from train/pretrain_labels.py) with a
goal and the expert response, in exactly the agent's prompt format (`build_messages` + `expert_response`
with the given PromptConfig, e.g. the quickstart's). Objectives:
  tap          "Tap Quiet Fire" / "Open …" / "Select …"              → click(element=k) of that label's line
  read         "What is the price of Quiet Fire?" (value beside/below) → answer(text=value)
  state        "Is Quiet Fire on?" (switch / checkbox / tab)          → answer(text="yes" | "no")
  toggle       "Turn off Quiet Fire" / "Mark … as done"               → click(element=k) of its switch / checkbox
  home         "Open the Quiet Fire app" on a home screen             → click(element=k) of its icon
  launch       "Find the playlist 'Quiet Fire'." on PhoneSim's home screen → open(text="Music"): which app
               serves a goal (train/pretrain_launch.py)
  screen_text  a tap or home item whose `prompt_loss_weight` > 0: the trainer also puts next-token loss
               on the UI-text tokens (`ui_span`; `encode_item` gives the token mask)
With `history` > 0 a goal (first or later turn; launch items excepted) carries the agent's "Earlier steps:" lines:
the app opened, and in half of them the goal's own action as the last step, answered by terminate: the agent's
answer-or-stop decision, which PhoneSim's episodes ask at every step after the first.
`PretrainSource(prompt_cfg, mix, difficulty, pool, seed)[i]` is a pure function of (seed, i), with
len 2**40 (a Grain-style RandomAccessDataSource). The `reading_eval` pool shares no word with `train`.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import re
from typing import Mapping, Optional, Sequence

import numpy as np

from gui_jax.core.dialects import ActionParseError, expressible, parse_response
from gui_jax.core.types import Action
from gui_jax.rl.batch import TrainSample
from gui_jax.rl.prompting import (PromptConfig, build_messages, compact_history, expert_response, model_text,
                                  ui_text, word_spaced)
from gui_jax.train.pretrain_labels import (DEFAULT_LABEL_KINDS, HOME_GOALS, LABEL_KINDS, NO, POOLS, READ_GOALS,
                                           READ_IMPERATIVE, READ_IMPERATIVE_BY_KIND, READ_WHERE, STATE_GOALS,
                                           TAP_GOALS, TOGGLE_GOALS, YES, label_pool)
from gui_jax.train.pretrain_apps import MAX_PAGE_LINES, PAGE_APP, app_serves, build_app_screen
from gui_jax.train.pretrain_launch import APPS, LAUNCH_GOALS, launch_action, launch_goal, launcher_observation
from gui_jax.train.pretrain_screens import (LAYOUTS, MAX_LINES, MIN_LINES, SERVES, build_screen, draw_kind,
                                            layout_range)

OBJECTIVES = ("tap", "read", "state", "home", "screen_text", "toggle", "launch")
DEFAULT_MIX = {"tap": 0.4, "read": 0.25, "state": 0.1, "home": 0.1, "screen_text": 0.15}
SOURCE_LEN = 2 ** 40
# history: of the goals with earlier steps, the share whose last step already did what the goal asks (→ terminate)
HISTORY_DONE_SHARE = 0.5
TERMINATE = Action("terminate", status="success")
UI_HEADER = "\nUI:\n"  # what prompting._observation_content writes before the UI lines


class ObjectiveMix:
    """Objective name → positive weight; items draw their objective with probability weight / Σ weights."""

    def __init__(self, weights: Optional[Mapping[str, float]] = None):
        weights = dict(DEFAULT_MIX if weights is None else weights)
        if not weights:
            raise ValueError(f"mix: needs at least one objective of {OBJECTIVES}")
        for name, w in weights.items():
            if name not in OBJECTIVES:
                raise ValueError(f"mix: unknown objective {name!r}; known: {', '.join(OBJECTIVES)}")
            if not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
                raise ValueError(f"mix[{name!r}] must be a positive weight, got {w!r} "
                                 "(leave an objective out instead)")
        self.names = tuple(weights)
        self.weights = {k: float(v) for k, v in weights.items()}
        total = sum(self.weights.values())
        self.probs = np.asarray([self.weights[k] / total for k in self.names])

    def __repr__(self):
        return f"ObjectiveMix({self.weights})"


@dataclasses.dataclass(frozen=True)
class Difficulty:
    """Curriculum knobs: UI lines per screen (min..max, ≤ 40), how often a distractor label shares a word with
    the target ("Quiet Fire" among "Quiet Letters", "Midnight Fire"), which layouts and label kinds appear."""
    min_lines: int = 4
    max_lines: int = 16
    shared_word_prob: float = 0.0
    layouts: tuple = ()                       # allowed layouts; empty = all of LAYOUTS
    label_kinds: Optional[Mapping] = None     # label kind → weight; None = DEFAULT_LABEL_KINDS

    def __post_init__(self):
        for name in ("min_lines", "max_lines"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or not MIN_LINES <= v <= MAX_LINES:
                raise ValueError(f"difficulty.{name} must be an int in [{MIN_LINES}, {MAX_LINES}], got {v!r}")
        if self.min_lines > self.max_lines:
            raise ValueError(f"difficulty.min_lines ({self.min_lines}) > difficulty.max_lines ({self.max_lines})")
        p = self.shared_word_prob
        if not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"difficulty.shared_word_prob must be in [0, 1], got {p!r}")
        bad = [x for x in self.layouts if x not in LAYOUTS]
        if bad:
            raise ValueError(f"difficulty.layouts: unknown {bad}; known: {', '.join(LAYOUTS)}")
        for k, w in (self.label_kinds or {}).items():
            if k not in LABEL_KINDS:
                raise ValueError(f"difficulty.label_kinds: unknown kind {k!r}; known: {', '.join(LABEL_KINDS)}")
            if not isinstance(w, (int, float)) or not w > 0:
                raise ValueError(f"difficulty.label_kinds[{k!r}] must be a positive weight, got {w!r}")
        if self.label_kinds is not None and not self.label_kinds:
            raise ValueError("difficulty.label_kinds is empty (None = the default kinds)")


def quickstart_prompt_config(max_ui_lines: int = 24, dialect: str = "ui_s1", answer_spaced: bool = True) -> PromptConfig:
    """The tiny agent's prompt settings (configs/quickstart.py), with room for `max_ui_lines` lines; answers spaced as
    the shipped base writes them (answer_spaced=False: the plain form of the bases before it)."""
    return PromptConfig(dialect=dialect, observation="ui_text", target="element", history_turns=0,
                        history_mode="compact", system_prompt=False, max_ui_lines=max_ui_lines, word_tokens=True,
                        ui_text_skip_unlabeled=True, ui_text_class=False, goal_last=True, answer_spaced=answer_spaced)


def _needs(objective: str) -> tuple[str, ...]:
    return ("tap", "home") if objective == "screen_text" else (objective,)


class PretrainSource:
    """Random access over synthetic pretraining items: `source[i]` depends on (seed, i) only.

    Item (dict): messages (chat, no images), target (response text), objective, goal, layout, label,
    target_element (tap/home/toggle: int, else None), answer (read/state: str, else None), label_element,
    value_element (read), ui_text, ui_span (message, content item, start, end of the UI lines in that text),
    prompt_loss_weight (> 0 on screen_text items), done (its earlier steps did the goal: target terminate),
    turns (further goals about the screen: dicts of goal, message, done, target, target_element, answer, label),
    n_lines, observation, pool, dialect, seed, index.
    """

    def __init__(self, prompt_cfg: PromptConfig, mix=None, difficulty: Optional[Difficulty] = None,
                 pool: str = "train", seed: int = 0, ui_loss_weight: float = 1.0, goals_per_screen: int = 1,
                 app_pages: float = 0.0, launch_goals: str = "topics", page_answers: bool = False,
                 token_values: float = 0.0, part_answers: bool = False, history: float = 0.0,
                 history_alone: bool = False, read_imperative: float = 0.0):
        """goals_per_screen: up to this many goals about one screen, the later ones as further chat turns
        (`turns`), each answered by the expert (fewer when the screen has fewer unique targets).
        app_pages: the probability that an item whose objective an app page serves (pretrain_apps.APP_SERVES)
        is drawn on one of PhoneSim's own app pages instead of a generic layout (0: never, streams unchanged).
        launch_goals: how launch items phrase their goals (pretrain_launch.LAUNCH_GOALS; "topics": streams unchanged).
        page_answers: app pages also ask PhoneSim's answer questions, and Expenses serves reads (pretrain_apps).
        token_values: the share of phrase / words values (message texts, row subtitles, fillers) written as sentences
        of token words (pretrain_labels.LabelPool.token_sentence; 0: streams unchanged).
        part_answers: song and task pages also serve reads whose answer is part of a row's line (the artist, the
        priority: pretrain_apps.PART_GOALS; False: streams unchanged).
        history: the probability that a goal carries earlier steps (`_history`; 0: streams unchanged).
        history_alone: only an item's first goal draws earlier steps, and an item that has them asks that goal
        alone (no later turns), as the agent's prompt does: among later goals the first goal's answer-or-stop step
        is not learnt (lookup_probe `done_share`; False: streams unchanged).
        read_imperative: the probability that a read goal is a command without "?" (pretrain_labels.READ_IMPERATIVE:
        "Read the price of X.") instead of a question (0: streams unchanged)."""
        if not isinstance(prompt_cfg, PromptConfig):
            raise ValueError(f"prompt_cfg must be a PromptConfig, got {type(prompt_cfg).__name__}")
        if prompt_cfg.observation != "ui_text":
            raise ValueError(f"prompt_cfg.observation must be 'ui_text' (screens have no pixels), "
                             f"got {prompt_cfg.observation!r}")
        if prompt_cfg.target != "element":
            raise ValueError(f"prompt_cfg.target must be 'element' (targets are element indices), "
                             f"got {prompt_cfg.target!r}")
        if not (expressible(Action("click", element=0), prompt_cfg.dialect)
                and expressible(Action("answer", text="x"), prompt_cfg.dialect)):
            raise ValueError(f"prompt_cfg.dialect {prompt_cfg.dialect!r} cannot write click(element=k) and answer")
        self.mix = mix if isinstance(mix, ObjectiveMix) else ObjectiveMix(mix)
        self.difficulty = difficulty if difficulty is not None else Difficulty()
        if not isinstance(self.difficulty, Difficulty):
            raise ValueError(f"difficulty must be a Difficulty, got {type(difficulty).__name__}")
        d = self.difficulty
        if d.max_lines > prompt_cfg.max_ui_lines:
            raise ValueError(f"difficulty.max_lines ({d.max_lines}) > prompt_cfg.max_ui_lines "
                             f"({prompt_cfg.max_ui_lines}): raise max_ui_lines or lines would be cut")
        if pool not in POOLS:
            raise ValueError(f"pool must be one of {POOLS}, got {pool!r}")
        if not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        if not isinstance(ui_loss_weight, (int, float)) or not ui_loss_weight > 0:
            raise ValueError(f"ui_loss_weight must be > 0, got {ui_loss_weight!r}")
        if not isinstance(goals_per_screen, (int, np.integer)) or not 1 <= goals_per_screen <= 16:
            raise ValueError(f"goals_per_screen must be an int in [1, 16], got {goals_per_screen!r}")
        self.cfg, self.pool_name, self.seed, self.ui_loss_weight = prompt_cfg, pool, int(seed), float(ui_loss_weight)
        self.goals_per_screen = int(goals_per_screen)
        _check_probability("app_pages", app_pages)
        if app_pages > 0 and prompt_cfg.max_ui_lines < MAX_PAGE_LINES:
            raise ValueError(f"app_pages > 0 needs prompt_cfg.max_ui_lines ≥ {MAX_PAGE_LINES} (the longest app page), "
                             f"got {prompt_cfg.max_ui_lines}")
        self.app_pages = float(app_pages)
        if launch_goals not in LAUNCH_GOALS:
            raise ValueError(f"launch_goals must be one of {LAUNCH_GOALS}, got {launch_goals!r}")
        self.launch_goals = launch_goals
        self.page_answers = bool(page_answers)
        _check_probability("token_values", token_values)
        self.token_values = float(token_values)
        self.part_answers = bool(part_answers)
        _check_probability("history", history)
        if history > 0 and prompt_cfg.history_mode != "compact":
            raise ValueError(f"history > 0 writes the compact history lines; prompt_cfg.history_mode is "
                             f"{prompt_cfg.history_mode!r}")
        self.history, self.history_alone = float(history), bool(history_alone)
        _check_probability("read_imperative", read_imperative)
        self.read_imperative = float(read_imperative)
        self.app_serves = app_serves(self.page_answers, self.part_answers)
        self.pool = label_pool(pool)
        self.label_kinds = dict(d.label_kinds or DEFAULT_LABEL_KINDS)
        allowed = d.layouts or LAYOUTS
        # objective → n_lines → layouts able to show it (checked here, so __getitem__ never fails on it)
        self.choices: dict[str, dict[int, list[tuple[str, str]]]] = {}
        if "launch" in self.mix.names and not expressible(launch_action("Music"), prompt_cfg.dialect):
            raise ValueError(f"mix has 'launch' but prompt_cfg.dialect {prompt_cfg.dialect!r} cannot write open(text=app)")
        for obj in (o for o in self.mix.names if o != "launch"):   # launch items use PhoneSim's home screen
            self.choices[obj] = {}
            for n in range(d.min_lines, d.max_lines + 1):
                ok = [(lay, need) for need in _needs(obj) for lay in SERVES[need] if lay in allowed
                      and layout_range(lay, need, prompt_cfg)[0] <= n <= layout_range(lay, need, prompt_cfg)[1]]
                if not ok:
                    raise ValueError(f"difficulty.layouts {tuple(allowed)} have no layout for objective {obj!r} "
                                     f"with {n} lines (difficulty.min_lines..max_lines)")
                self.choices[obj][n] = ok

    def __len__(self) -> int:
        return SOURCE_LEN

    def __getitem__(self, i) -> dict:
        i = int(i)
        if not 0 <= i < SOURCE_LEN:
            raise IndexError(f"index {i} outside [0, {SOURCE_LEN})")
        rng = np.random.default_rng((self.seed, i))
        obj = self.mix.names[int(rng.choice(len(self.mix.names), p=self.mix.probs))]
        if obj == "launch":
            return self._launch_item(rng, i)
        d = self.difficulty
        n = int(rng.integers(d.min_lines, d.max_lines + 1))
        pages = [(page, need) for need in _needs(obj) for page in self.app_serves.get(need, ())]
        if self.app_pages > 0 and pages and rng.random() < self.app_pages:   # no draw at 0: streams unchanged
            layout, need = pages[int(rng.integers(len(pages)))]
            scr = build_app_screen(rng, self.pool, self.cfg, page=layout, need=need, n_lines=n,
                                   shared_word_prob=d.shared_word_prob, label_kinds=self.label_kinds,
                                   with_others=self.goals_per_screen > 1, page_answers=self.page_answers,
                                   token_values=self.token_values, part_answers=self.part_answers)
        else:
            options = self.choices[obj][n]
            layout, need = options[int(rng.integers(len(options)))]
            scr = build_screen(rng, self.pool, self.cfg, layout=layout, need=need, n_lines=n,
                               shared_word_prob=d.shared_word_prob, label_kinds=self.label_kinds,
                               with_others=self.goals_per_screen > 1, token_values=self.token_values)
        goal, action, answer = _goal_and_action(rng, need, scr.target, scr.tap_element, self.read_imperative)
        obs = scr.observation
        steps, done = self._history(rng, obs, layout, action)
        if done:
            action, answer = TERMINATE, None
        messages, _ = build_messages(goal, [(None, r) for r in steps], obs, self.cfg)
        element = action.element if action.type == "click" else None
        target = expert_response(action, obs, self.cfg, element=element)
        turns = []
        alone = self.history_alone and bool(steps)   # history_alone: an item with earlier steps asks one goal
        if self.goals_per_screen > 1 and scr.others and not alone:  # draws from rng only here: 1 goal is unchanged
            k = min(self.goals_per_screen - 1, len(scr.others))
            for j in rng.permutation(len(scr.others))[:k]:
                slot, _, tap, _ = scr.others[int(j)]
                g, a, ans = _goal_and_action(rng, need, slot, tap, self.read_imperative)
                s_steps, s_done = ([], False) if self.history_alone else self._history(rng, obs, layout, a)
                if s_done:
                    a, ans = TERMINATE, None
                el = a.element if a.type == "click" else None
                turns.append({"goal": g, "message": self._turn_message(g, s_steps), "done": s_done,
                              "target": expert_response(a, obs, self.cfg, element=el),
                              "target_element": el, "answer": ans, "label": slot.label})
        return {"messages": messages, "target": target, "objective": obj, "goal": goal, "layout": layout,
                "done": done, "earlier_steps": bool(steps),   # the first action name then decides stop or act
                "label": scr.target.label, "target_element": element, "answer": answer,
                "label_element": scr.label_element, "value_element": scr.value_element,
                "ui_text": ui_text(obs, self.cfg), "ui_span": ui_span(messages),
                "prompt_loss_weight": self.ui_loss_weight if obj == "screen_text" else 0.0,
                "turns": turns, "n_lines": scr.n_lines, "observation": obs, "pool": self.pool_name, "dialect": self.cfg.dialect,
                "seed": self.seed, "index": i}


    def _history(self, rng, obs, layout: str, action: Action) -> tuple[list[str], bool]:
        """(earlier responses, done) for one goal: with probability `history`, the app opened (an app page's own,
        else any), then with probability HISTORY_DONE_SHARE `action` itself (done: the goal's answer is
        terminate). No draw at history 0 (streams unchanged)."""
        if self.history <= 0 or rng.random() >= self.history:
            return [], False
        app = PAGE_APP.get(layout) or APPS[int(rng.integers(len(APPS)))]
        steps = [expert_response(launch_action(app), obs, self.cfg)]
        done = bool(rng.random() < HISTORY_DONE_SHARE)
        if done:
            steps.append(expert_response(action, obs, self.cfg,
                                         element=action.element if action.type == "click" else None))
        return steps, done

    def _turn_message(self, goal: str, steps: Sequence[str]) -> str:
        """A later turn's user message: its goal, and its earlier steps as the first prompt writes them."""
        g = word_spaced(goal) if self.cfg.word_tokens else goal
        if not steps:
            return f"Goal: {g}"
        return f"Goal: {g}\n{compact_history(steps, self.cfg)}" + (f"Goal: {g}" if self.cfg.goal_last else "")

    def _launch_label(self, rng) -> str:
        return self.pool.label(rng, draw_kind(rng, self.label_kinds))

    def _launch_item(self, rng, i: int) -> dict:
        """A launch item: PhoneSim's home screen, a goal about one app's topic, the open action as the expert's;
        further goals (goals_per_screen) about other apps as later turns."""
        obs = launcher_observation()
        screen = ui_text(obs, self.cfg)
        goal, app = launch_goal(rng, self._launch_label(rng), style=self.launch_goals)
        messages, _ = build_messages(goal, [], obs, self.cfg)
        turns = []
        for other in rng.permutation([a for a in APPS if a != app])[:self.goals_per_screen - 1]:
            g, _ = launch_goal(rng, self._launch_label(rng), str(other), self.launch_goals)
            turns.append({"goal": g, "message": f"Goal: {word_spaced(g) if self.cfg.word_tokens else g}",
                          "target": expert_response(launch_action(str(other)), obs, self.cfg),
                          "target_element": None, "answer": None, "label": str(other), "app": str(other)})
        return {"messages": messages, "target": expert_response(launch_action(app), obs, self.cfg),
                "objective": "launch", "goal": goal, "layout": "launcher", "label": app, "app": app, "done": False,
                "target_element": None, "answer": None, "label_element": None, "value_element": None,
                "ui_text": screen, "ui_span": ui_span(messages), "prompt_loss_weight": 0.0,
                "turns": turns, "n_lines": len(screen.splitlines()), "observation": obs,
                "pool": self.pool_name, "dialect": self.cfg.dialect, "seed": self.seed, "index": i}


def _check_probability(name: str, value) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")


def _pick(rng, options: Sequence[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _goal_and_action(rng, need: str, s, tap_element: Optional[int],
                     read_imperative: float = 0.0) -> tuple[str, Action, Optional[str]]:
    """(goal text, expert action, answer or None) for slot `s` of a screen (tap_element: its tap element); a read
    goal is a command with probability read_imperative (PretrainSource)."""
    extra = tuple(s.goals.get(need, ()))   # an app page's own phrasings (none on the generic layouts)
    if need in ("tap", "home"):
        goal = _pick(rng, (TAP_GOALS if need == "tap" else HOME_GOALS) + extra).format(L=s.label)
        return goal, Action("click", element=tap_element), None
    if need == "toggle":   # the goal asks for the state the slot is not in
        return _pick(rng, TOGGLE_GOALS[(s.state_kind, bool(s.state))] + extra).format(L=s.label), \
            Action("click", element=tap_element), None
    if need == "read":
        # a value that is part of a line ("part") is asked only in its page's own phrasing
        options = READ_GOALS.get(s.value_kind, ()) + READ_WHERE.get(s.where, ()) + extra
        generic = READ_GOALS.get(s.value_kind) or READ_WHERE.get(s.where)   # page-only phrasings stay as they are
        if read_imperative > 0 and generic and rng.random() < read_imperative:   # no draw at 0: streams unchanged
            options = READ_IMPERATIVE + READ_IMPERATIVE_BY_KIND.get(s.value_kind, ())
        return _pick(rng, options).format(L=s.label), Action("answer", text=s.value), s.value
    polarity = True if s.state_kind == "tab" else bool(rng.random() < 0.5)
    answer = YES if s.state == polarity else NO
    return _pick(rng, STATE_GOALS[(s.state_kind, polarity)]).format(L=s.label), Action("answer", text=answer), answer


def ui_span(messages: list[dict]) -> tuple[int, int, int, int]:
    """(message, content item, start, end): messages[m]["content"][c]["text"][start:end] is the UI text."""
    m = len(messages) - 1
    for c, part in enumerate(messages[m]["content"]):
        text = part.get("text", "")
        if text.startswith(UI_HEADER):
            return m, c, len(UI_HEADER), len(text)
    raise ValueError("the prompt's last message has no UI text (prompt observation must be ui_text)")


# ---- encoding for the trainer ------------------------------------------------------------------------------
@dataclasses.dataclass
class EncodedItem:
    """An item as token ids: `sample` as SFTSource makes it; `ui_mask` bool [P] marks the prompt tokens of the
    UI text (where `prompt_loss_weight` applies)."""
    sample: TrainSample
    ui_mask: np.ndarray
    prompt_loss_weight: float
    objective: str


def encode_item(encoder, item: dict) -> EncodedItem:
    """Token ids of an item through `encoder.encode` (an agent's policy or its picklable `ChatEncoder`: the
    chat template and tokenizer of the agent).

    The UI-text mask comes from encoding the prompt a second time with the UI lines left out: the tokens
    between the common prefix and the common suffix of the two id sequences are the UI text's (exact unless
    the tokenizer merges a token across the UI text's first or last character)."""
    g = encoder.encode((item["messages"], []), item["target"])
    response = g.response_ids
    if item.get("turns"):
        response = _later_turns(encoder, item, g.prompt_ids, g.response_ids)
    sample = TrainSample(g.prompt_ids, response, advantage=1.0, pixel_values=g.pixel_values,
                         image_grid_thw=g.image_grid_thw)
    m, c, start, end = item["ui_span"]
    blank = copy.deepcopy(item["messages"])
    text = blank[m]["content"][c]["text"]
    blank[m]["content"][c]["text"] = text[:start] + text[end:]
    ids = [int(t) for t in sample.prompt_ids]
    ids0 = [int(t) for t in encoder.encode((blank, []), item["target"]).prompt_ids]
    n = min(len(ids), len(ids0))
    pre = 0
    while pre < n and ids[pre] == ids0[pre]:
        pre += 1
    suf = 0
    while suf < n - pre and ids[-1 - suf] == ids0[-1 - suf]:
        suf += 1
    mask = np.zeros(len(ids), bool)
    mask[pre:len(ids) - suf] = True
    return EncodedItem(sample, mask, float(item["prompt_loss_weight"]), item["objective"])


def _later_turns(encoder, item: dict, prompt_ids, first_response) -> np.ndarray:
    """The response ids of a multi-goal item: the first answer, then each further goal as a user turn and its
    answer, in the chat template. All of it is trained: the answers (the look-up) and the goals' label words
    (copying a label from the screen once its first word is written)."""
    messages, previous = list(item["messages"]), item["target"]
    for turn in item["turns"]:
        messages += [{"role": "assistant", "content": model_text(previous)},
                     {"role": "user", "content": [{"type": "text", "text": turn["message"]}]}]
        previous = turn["target"]
    g = encoder.encode((messages, []), previous)
    ids = np.concatenate([np.asarray(g.prompt_ids), np.asarray(g.response_ids)])
    p, r = len(prompt_ids), len(first_response)
    if not (np.array_equal(ids[:p], prompt_ids) and np.array_equal(ids[p:p + r], first_response)):
        raise ValueError(f"item {item['index']}: the multi-turn encoding does not start with the first turn's "
                         "prompt and answer (the chat template re-tokenises across turns)")
    return ids[p:]


# ---- reading evaluation ------------------------------------------------------------------------------------
def reading_eval_items(n: int, lines_range: tuple[int, int] = (4, 24), shared_word_prob: float = 0.0,
                       seed: int = 0, prompt_cfg: Optional[PromptConfig] = None,
                       objectives: Sequence[str] = ("tap", "read"), app_pages: float = 0.0,
                       pool: str = "reading_eval") -> list[dict]:
    """n items from `pool` (default `reading_eval`: no word of the train pool): equal shares of `objectives`, on
    PhoneSim's app pages with probability app_pages (PretrainSource). prompt_cfg defaults to the quickstart's with
    max_ui_lines raised to lines_range[1] where needed."""
    lo, hi = lines_range
    cfg = prompt_cfg or quickstart_prompt_config(max_ui_lines=max(24, int(hi)))
    src = PretrainSource(cfg, ObjectiveMix({o: 1.0 for o in objectives}),
                         Difficulty(min_lines=lo, max_lines=hi, shared_word_prob=shared_word_prob),
                         pool=pool, seed=seed, app_pages=app_pages)
    return [src[i] for i in range(int(n))]


def normalize_answer(text: str) -> str:
    """Lower case, single spaces, no surrounding quotes or final period."""
    t = re.sub(r"\s+", " ", text.strip().lower())
    return t.strip("'\"").strip().rstrip(".").strip()


def score(item: dict, response_text: str) -> bool:
    """Whether a model response does what the item asks: tap/home the target element index; read/state an
    answer equal to the expected one after `normalize_answer`; launch: open the item's app. Unparsable responses
    are wrong."""
    try:
        _, a = parse_response(response_text, item["dialect"])
    except ActionParseError:
        return False
    if item.get("app") is not None:   # launch: open the app that serves the goal
        return a.type == "open" and normalize_answer(a.text or "") == normalize_answer(item["app"])
    if item["target_element"] is not None:
        return a.type == "click" and a.element == item["target_element"]
    return a.type == "answer" and a.text is not None and normalize_answer(a.text) == normalize_answer(item["answer"])
