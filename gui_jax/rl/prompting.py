"""Prompt building for one agent step: goal, history policy, observation, action dialect.

History window (docs/algorithms.md §3). K = `history_turns` counts the observations in the prompt,
the current one included (UI-S1 keeps 2 images in total: K = 2 → the previous screenshot + the
current one). Two modes (`history_mode`):
  full (UI-S1): every earlier step (the last `max_history_lines`) is an assistant turn holding the
    response as written or patched; the last K − 1 of them follow a user turn with their observation,
    older ones have their observation removed (no empty user turn is left behind).
  compact: the last K − 1 steps as full turns (observation + response); older steps are one text line
    each ("Earlier steps:"), the form small models learn from fastest.
Images: the current screenshot is resized to `image_max_pixels`, history screenshots to
`history_image_max_pixels` (0 = as rendered / same as current), with the Qwen2.5-VL smart resize
(multiples of 28), so the image processor keeps them as they are; the model's coordinates live in
the current image's frame (`model_image_size`).
Observation modes: `screenshot` (pixels, coordinates), `ui_text` (the simplified UI tree as text,
actions by element index, UI-Genie style), `xml` (MobileRL's simplified UI XML, envs/xml.py: off-screen
elements dropped, each line led by the element index), or `both` (screenshot + ui_text).
Set-of-Mark (`set_of_mark`, rl/set_of_mark.py): every screenshot carries the box and index of each element
the prompt lists (`listed_elements`), so element actions also work from pixels.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Optional, Sequence

import numpy as np
from PIL import Image

from gui_jax.core.dialects import (ActionParseError, expressible, format_response, parse_response,
                                   scale_action_to_image)
from gui_jax.core.labels import identifying_label
from gui_jax.core.types import Action, Observation, UIElement
from gui_jax.envs.xml import element_line, on_screen, onscreen_indices
from gui_jax.models.processor import smart_resize, to_rgb_pil
from gui_jax.models.qwen2_5_vl.config import QWEN_SPECIAL_TOKENS
from gui_jax.rl.names import HISTORY_MODES, OBSERVATION_MODES, TARGETS  # noqa: F401 - re-exported
from gui_jax.rl.set_of_mark import mark_screenshot

IMAGE_FACTOR = 28  # Qwen2.5-VL: patch 14 × spatial merge 2


@dataclasses.dataclass(frozen=True)
class PromptConfig:
    dialect: str = "ui_s1"
    observation: str = "screenshot"      # screenshot | ui_text | xml | both (field docs: train/config_blocks.py)
    target: str = "coordinate"           # coordinate | element | text (how point actions are given:
                                         # pixels, UI-element index, or the element's label words)
    history_turns: int = 2               # K: observations in the prompt, the current one included
    history_mode: str = "full"           # full (UI-S1: earlier responses as written) | compact
    max_history_lines: int = 10          # earlier steps kept (full: text turns, compact: lines); ≤ 0 = all
    image_max_pixels: int = 0            # current screenshot resized under this area (0 = as rendered)
    history_image_max_pixels: int = 0    # history screenshots (0 = like the current one)
    image_min_pixels: int = 56 * 56
    ui_text_bounds: bool = False         # add "[x1,y1][x2,y2]" to each UI line (docs/algorithms.md §10)
    ui_text_class: bool = True           # keep the widget class (e.g. "Button") in each UI line
    word_tokens: bool = False            # goal and UI labels written so every word starts after a
                                         # space (one token form per word: goal words match label
                                         # tokens); labels show text and content description both
    answer_spaced: bool = False          # an answer's text after a leading space: a value copied from a UI
                                         # line keeps the token form it has there (" Sep" not "Sep")
    ui_text_skip_unlabeled: bool = False  # drop UI lines with no text/description (flags only)
    ui_text_index_last: bool = False     # "flags; label [k]" instead of "[k] flags; label": the index
                                         # right after the words a goal names (a one-hop lookup)
    max_ui_lines: int = 40
    set_of_mark: bool = False            # screenshots carry each listed element's box and index (UI-Genie)
    system_prompt: bool = True
    goal_last: bool = False              # repeat the goal after the current observation (short
                                         # attention distance: helps small models)

    def __post_init__(self):
        if self.observation not in OBSERVATION_MODES:
            raise ValueError(f"unknown observation mode {self.observation!r}; known: {OBSERVATION_MODES}")
        if self.target not in TARGETS:
            raise ValueError(f"unknown action target {self.target!r}; known: {', '.join(TARGETS)}")
        if self.target == "element" and self.observation == "screenshot" and not self.set_of_mark:
            raise ValueError("target='element' needs the UI tree in the prompt (observation ui_text/xml/both) "
                             "or its marks on the screenshot (set_of_mark=True)")
        if self.history_mode not in HISTORY_MODES:
            raise ValueError(f"unknown history_mode {self.history_mode!r}; known: {HISTORY_MODES}")
        if self.history_turns < 0:
            raise ValueError(f"history_turns (K) must be >= 0, got {self.history_turns}")


def _image_max_pixels(cfg: PromptConfig, history: bool) -> int:
    if history and cfg.history_image_max_pixels > 0:
        return cfg.history_image_max_pixels
    return cfg.image_max_pixels


def image_size_for(height: int, width: int, cfg: PromptConfig, history: bool = False) -> tuple[int, int]:
    """(width, height) of the image the model sees for a screenshot of this size."""
    max_pixels = _image_max_pixels(cfg, history)
    if max_pixels <= 0:
        return width, height
    rh, rw = smart_resize(height, width, IMAGE_FACTOR, cfg.image_min_pixels, max_pixels)
    return rw, rh


def model_image_size(obs: Observation, cfg: PromptConfig) -> tuple[int, int]:
    """(width, height) of the current-step image: the frame of the model's coordinates."""
    return image_size_for(obs.screenshot.shape[0], obs.screenshot.shape[1], cfg)


def model_image(screenshot: np.ndarray, cfg: PromptConfig, history: bool = False) -> np.ndarray:
    """The screenshot as the model sees it (bicubic resize, as the image processor does)."""
    h, w = screenshot.shape[:2]
    size = image_size_for(h, w, cfg, history)
    if size == (w, h):
        return screenshot
    return np.asarray(to_rgb_pil(screenshot, "screenshot").resize(size, resample=Image.BICUBIC))


def _flags(e: UIElement) -> str:
    names = [("clickable", "click"), ("long_clickable", "long"), ("scrollable", "scroll"),
             ("checkable", "check"), ("checked", "on"), ("focused", "focus"), ("selected", "sel")]
    return ",".join(short for attr, short in names if getattr(e, attr))


def visible_elements(obs: Observation) -> list[UIElement]:
    """Elements worth showing (docs/algorithms.md §10 filter): any interaction flag or some text."""
    keep = []
    for e in obs.ui_elements:
        interactive = (e.clickable or e.long_clickable or e.scrollable or e.checkable or e.checked
                       or e.focusable or e.selected or e.password)
        if interactive or e.text or e.content_desc:
            keep.append(e)
    return keep


def word_spaced(text: str) -> str:
    """A space after each opening quote, so a quoted word tokenizes as it does in running text
    ("the task 'Call plumber'" → "the task ' Call plumber'")."""
    return re.sub(r"(^|\s)(['\"])(?=\S)", r"\1\2 ", text)


def shown_elements(obs: Observation, cfg: PromptConfig) -> list[UIElement]:
    """The elements the UI text lists, in order (visible, labelled if so configured, at most max_ui_lines)."""
    shown = [e for e in visible_elements(obs) if e.text or e.content_desc or not cfg.ui_text_skip_unlabeled]
    return shown[: cfg.max_ui_lines]


def element_label_text(e: UIElement, cfg: PromptConfig) -> str:
    """An element's label as its UI-text line writes it (text or description; both, word-spaced, with
    `word_tokens`)."""
    if cfg.word_tokens:
        both = [" ".join(x.split()) for x in (e.content_desc, e.text) if x]
        return " " + word_spaced(" ".join(dict.fromkeys(both)))[:80] if both else ""
    return (e.text or e.content_desc).replace("\n", " ")[:60]


def ui_text(obs: Observation, cfg: PromptConfig) -> str:
    """One line per element: `[index] Class;flags;text` (+ bounds when configured; the index last with
    `ui_text_index_last`)."""
    lines = []
    for e in shown_elements(obs, cfg):
        label = element_label_text(e, cfg)
        cls = f"{e.cls.rsplit('.', 1)[-1]};" if cfg.ui_text_class else ""
        line = f"{cls}{_flags(e)};{label}" if cfg.ui_text_index_last else f"[{e.index}] {cls}{_flags(e)};{label}"
        if cfg.ui_text_bounds:
            x1, y1, x2, y2 = e.bounds
            line += f";[{x1},{y1}][{x2},{y2}]"
        if cfg.ui_text_index_last:
            line += f" [{e.index}]"
        lines.append(line)
    return "\n".join(lines)


def xml_elements(obs: Observation, cfg: PromptConfig) -> list[UIElement]:
    """The elements the `xml` observation lists, in document order: on screen (inside the screen and, with a
    UI XML dump, inside their parent), not redundant (envs/xml.py), at most max_ui_lines."""
    if obs.ui_xml:
        kept = onscreen_indices(obs.ui_xml, obs.screen_size)
        shown = [e for e in obs.ui_elements if e.index in kept]
    else:  # elements without a tree (e.g. AndroidControl): the screen check only
        shown = [e for e in obs.ui_elements if on_screen(e.bounds, obs.screen_size)]
    return [e for e in shown if element_line(e) is not None][: cfg.max_ui_lines]


def xml_text(obs: Observation, cfg: PromptConfig) -> str:
    """One line per listed element: `[index] Class;action;flags;text;[x1,y1][x2,y2]` (MobileRL App. D)."""
    return "\n".join(f"[{e.index}] {element_line(e)}" for e in xml_elements(obs, cfg))


def listed_elements(obs: Observation, cfg: PromptConfig) -> list[UIElement]:
    """The elements the prompt can name by index: those of the xml text in `xml` mode, else `shown_elements`."""
    return xml_elements(obs, cfg) if cfg.observation == "xml" else shown_elements(obs, cfg)


def prompt_screenshot(obs: Observation, cfg: PromptConfig, history: bool = False) -> np.ndarray:
    """The screenshot as the prompt carries it: with the Set-of-Mark marks when configured, resized."""
    shot = obs.screenshot
    if cfg.set_of_mark:
        shot = mark_screenshot(shot, listed_elements(obs, cfg), obs.screen_size)
    return model_image(shot, cfg, history)


def system_text(cfg: PromptConfig) -> str:
    target = {"element": "point actions name the UI element index: \"element\": k",
              "text": "point actions name the UI element by its label: \"text\": words of the label",
              "coordinate": "coordinates are pixels of the screenshot"}[cfg.target]
    return (f"You operate an Android phone to complete the user's goal. Reply in the {cfg.dialect} "
            f"format with one action per turn; {target}. Actions: click, long_press, swipe, type, "
            "system_button, open, wait, answer, terminate."
            + (" Numbered boxes on the screenshot mark the UI elements." if cfg.set_of_mark else ""))


def observation_content(obs: Observation, cfg: PromptConfig, images: list, history: bool = False) -> list[dict]:
    """The content items of one observation (an image placeholder and/or the UI text); appends its image."""
    content = []
    if cfg.observation in ("screenshot", "both"):
        images.append(prompt_screenshot(obs, cfg, history))
        content.append({"type": "image"})
    if cfg.observation in ("ui_text", "both"):
        content.append({"type": "text", "text": "\nUI:\n" + ui_text(obs, cfg)})
    if cfg.observation == "xml":
        content.append({"type": "text", "text": "\nUI:\n" + xml_text(obs, cfg)})
    return content


def model_text(text: str) -> str:
    """A model-written text as it may re-enter a prompt: chat-template markers (<|im_start|> etc.) removed.
    A sampled response can spell one out; re-encoded, it would become the special token and break the
    chat structure of every later prompt of the episode."""
    for marker in QWEN_SPECIAL_TOKENS:
        if marker in text:
            text = text.replace(marker, "")
    return text


def action_line(response: str, dialect: str) -> str:
    """A one-line summary of an old step for the text history."""
    try:
        _, a = parse_response(response, dialect)
        return model_text(a.action_desc or str(a.replace(action_desc=None)))
    except ActionParseError:
        return "(unparsable response)"


def compact_history(responses: Sequence[str], cfg: PromptConfig) -> str:
    """The compact history block ("Earlier steps:" and one numbered line per earlier response, the last
    `max_history_lines`), or "" without earlier steps."""
    if not responses:
        return ""
    lines = [f"{i + 1}. {action_line(r, cfg.dialect)}" for i, r in enumerate(responses)]
    return "Earlier steps:\n" + "\n".join(lines[-cfg.max_history_lines:]) + "\n"


def build_messages(goal: str, history: Sequence[tuple[Observation, str]], current: Observation,
                   cfg: PromptConfig) -> tuple[list[dict], list[np.ndarray]]:
    """Chat messages + the images they reference, in order.

    history: earlier steps as (observation, response text as written or patched).
    """
    images: list[np.ndarray] = []
    messages: list[dict] = []
    if cfg.system_prompt:
        messages.append({"role": "system", "content": system_text(cfg)})
    n_obs = max(cfg.history_turns - 1, 0)  # earlier observations shown (K counts the current one)
    if cfg.word_tokens:
        goal = word_spaced(goal)
    intro = f"Goal: {goal}\n"
    if cfg.history_mode == "full":
        kept = list(history[-cfg.max_history_lines:]) if cfg.max_history_lines > 0 else list(history)
        if len(kept) < len(history):
            intro += f"({len(history) - len(kept)} earlier steps not shown)\n"
        turns = [(obs if k >= len(kept) - n_obs else None, r) for k, (obs, r) in enumerate(kept)]
    else:
        old, recent = history[: max(len(history) - n_obs, 0)], history[max(len(history) - n_obs, 0):]
        intro += compact_history([r for _, r in old], cfg)
        turns = list(recent)
    first = True
    for obs, response in turns:
        if obs is not None or first:
            content = [{"type": "text", "text": intro}] if first else []
            if obs is not None:
                content += observation_content(obs, cfg, images, history=True)
            messages.append({"role": "user", "content": content})
        messages.append({"role": "assistant", "content": model_text(response)})
        first = False
    content = ([{"type": "text", "text": intro}] if first else []) + observation_content(current, cfg, images)
    if cfg.goal_last:
        content.append({"type": "text", "text": f"\nGoal: {goal}"})
    messages.append({"role": "user", "content": content})
    return messages, images


def expert_response(action: Action, obs: Observation, cfg: PromptConfig, *, thought: str = "",
                    image_size: Optional[tuple[int, int]] = None,
                    element: Optional[int] = None) -> str:
    """The expert action as the model should write it for this prompt configuration.

    Coordinates go from screen pixels into the model image (`image_size`, default the current
    step's model image, `model_image_size`); in element mode point actions carry only the element index, in
    text mode the shortest label prefix that names the element on this screen (core/labels.py; the index
    where no label does). A scroll in a dialect without scroll becomes a finger swipe through the screen centre.
    """
    a = action.replace(action_desc=None)
    if cfg.target == "text" and a.type in ("click", "long_press"):
        idx = element if element is not None else a.element
        label = None if idx is None else identifying_label(obs.ui_elements, int(idx))
        if label is not None:
            # word_tokens: a leading space gives the label the token form it has in the goal and UI text
            a = Action(a.type, text=(" " + label) if cfg.word_tokens else label)
            return format_response(a, cfg.dialect, thought)
    by_index = cfg.target == "element" or (cfg.target == "text" and cfg.observation != "screenshot")
    if by_index and a.type in ("click", "long_press"):
        idx = element if element is not None else a.element
        if idx is None:
            raise ValueError(f"element-mode prompt needs the expert's element index for {a}")
        a = Action(a.type, element=int(idx))
    else:
        if image_size is None:
            image_size = model_image_size(obs, cfg)
        a = scale_action_to_image(a.replace(element=None), obs.screen_size, image_size)
        a = a.replace(**{f: round(getattr(a, f)) for f in ("x", "y", "x2", "y2") if getattr(a, f) is not None})
    if a.type == "answer" and cfg.answer_spaced and a.text and not a.text.startswith(" "):
        a = a.replace(text=" " + a.text)   # every reader of an answer strips it; the tokens now match the screen's
    if a.type == "scroll" and not expressible(a, cfg.dialect):
        w, h = image_size or model_image_size(obs, cfg)
        cx, cy, dx, dy = w // 2, h // 2, w // 4, h // 4
        finger = {"down": (0, -dy), "up": (0, dy), "right": (-dx, 0), "left": (dx, 0)}[a.direction]
        a = Action("swipe", x=cx - finger[0], y=cy - finger[1], x2=cx + finger[0], y2=cy + finger[1])
    return format_response(a, cfg.dialect, thought)
