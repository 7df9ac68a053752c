"""AndroidControl (Li et al., 2024) episodes from its published GZIP TFRecord files, no TensorFlow.

Each record is a `tf.train.Example` with features
  episode_id int64[1], goal bytes[1], screenshots bytes[T+1] (PNG), screenshot_widths int64[T+1],
  screenshot_heights int64[T+1], accessibility_trees bytes[T+1] (AndroidAccessibilityForest
  protos), actions bytes[T] (JSON), step_instructions bytes[T].
`read_androidcontrol` turns them into core `Episode`s; `write_androidcontrol_tfrecord` writes the
same schema (used by tests and to export episodes).

Action mapping (AndroidControl / AndroidWorld json_action → canonical, docs/algorithms.md §1):
  click → click(x,y); long_press → long_press(x,y); scroll(direction) → scroll(direction);
  swipe(direction) → scroll(opposite); open_app(app_name) → open(text); input_text(text) →
  type(text); type(x,y,text) → type(text,x,y) (the click + Enter it implies are not separate
  steps); navigate_back/home → system_button Back/Home; keyboard_enter → system_button Enter;
  wait → wait(time=1.0) (AndroidWorld sleeps 1 s; the data carries no duration);
  answer(text) → answer(text); status(goal_status complete|infeasible) → terminate(success|failure).

Scroll direction. docs/algorithms.md §1 uses the *content* direction (scroll down = finger swipes up).
AndroidControl's `scroll` belongs to the AndroidWorld json_action family, whose executor performs
`scroll down` as a finger move from the centre to the top edge (finger up) and defines `swipe` as
its inverse. So AndroidControl's scroll direction already is the content direction and maps
unchanged; `swipe` directions are flipped. `scroll_convention="finger"` flips scroll too, for
data sets that record the finger direction.
"""
from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

import numpy as np
from PIL import Image

from gui_jax.core.types import Action, ActionError, Episode, Observation, UIElement
from google.protobuf.message import DecodeError

from gui_jax.data.protos import NODE_FLAGS, NODE_STRINGS, accessibility_forest_messages
from gui_jax.data.tfrecord import TFRecordError, encode_example, iter_tfrecord, parse_example, write_tfrecord

WAIT_SECONDS = 1.0
_OPPOSITE = {"up": "down", "down": "up", "left": "right", "right": "left"}
_BUTTON_ACTIONS = {"Back": "navigate_back", "Home": "navigate_home", "Enter": "keyboard_enter"}
_SUCCESS_STATUSES = ("complete", "successful", "success", "task_complete")
_FAILURE_STATUSES = ("infeasible", "failure", "failed", "task_impossible")
# feature name -> expected kind; accessibility_trees is optional (not every export has it).
_SCHEMA = {
    "episode_id": "int64", "goal": "bytes", "screenshots": "bytes", "screenshot_widths": "int64",
    "screenshot_heights": "int64", "actions": "bytes", "step_instructions": "bytes",
}
_OPTIONAL = {"accessibility_trees": "bytes"}


class AndroidControlFormatError(TFRecordError):
    """A malformed AndroidControl record; names the file, record index, field (and step)."""

    def __init__(self, path, record_index, field, message, step: Optional[int] = None):
        self.step = step
        if step is not None:
            message = f"step {step}: {message}"
        super().__init__(path, record_index, field, message)


# ----------------------------------------------------------------------------- actions


def _num(d: dict, key: str) -> float:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{key!r} must be a number, got {v!r}")
    return float(v)


def _text(d: dict, key: str) -> str:
    v = d.get(key)
    if not isinstance(v, str):
        raise ValueError(f"{key!r} must be a string, got {v!r}")
    return v


def _direction(d: dict) -> str:
    v = d.get("direction")
    if v not in _OPPOSITE:
        raise ValueError(f"'direction' must be one of up/down/left/right, got {v!r}")
    return v


def androidcontrol_to_action(d: dict, *, scroll_convention: str = "content") -> Action:
    """Canonical `Action` for one AndroidControl action dict. Raises ValueError on bad input."""
    if scroll_convention not in ("content", "finger"):
        raise ValueError(f"scroll_convention must be 'content' or 'finger', got {scroll_convention!r}")
    if not isinstance(d, dict):
        raise ValueError(f"expected a JSON object, got {type(d).__name__}")
    kind = d.get("action_type")
    if kind in ("click", "long_press"):
        return Action(type=kind, x=_num(d, "x"), y=_num(d, "y"))
    if kind in ("scroll", "swipe"):
        direction = _direction(d)
        flip = (kind == "swipe") != (scroll_convention == "finger")
        return Action(type="scroll", direction=_OPPOSITE[direction] if flip else direction)
    if kind == "open_app":
        return Action(type="open", text=_text(d, "app_name"))
    if kind == "input_text":
        x, y = (d.get("x"), d.get("y"))
        if x is not None and y is not None:
            return Action(type="type", text=_text(d, "text"), x=_num(d, "x"), y=_num(d, "y"))
        return Action(type="type", text=_text(d, "text"))
    if kind == "type":
        return Action(type="type", text=_text(d, "text"), x=_num(d, "x"), y=_num(d, "y"))
    if kind == "navigate_back":
        return Action(type="system_button", button="Back")
    if kind == "navigate_home":
        return Action(type="system_button", button="Home")
    if kind == "keyboard_enter":
        return Action(type="system_button", button="Enter")
    if kind == "wait":
        return Action(type="wait", time=WAIT_SECONDS)
    if kind == "answer":
        return Action(type="answer", text=_text(d, "text"))
    if kind == "status":
        status = d.get("goal_status")
        if status in _SUCCESS_STATUSES:
            return Action(type="terminate", status="success")
        if status in _FAILURE_STATUSES:
            return Action(type="terminate", status="failure")
        raise ValueError(f"unknown goal_status {status!r}; expected one of "
                         f"{_SUCCESS_STATUSES + _FAILURE_STATUSES}")
    if kind in _OPPOSITE:  # bare direction names are not AndroidControl actions: say so clearly
        raise ValueError(f"unknown action_type {kind!r} (did you mean scroll?)")
    raise ValueError(f"unknown action_type {kind!r}")


def _coord(v: float):
    return int(v) if float(v).is_integer() else float(v)


def action_to_androidcontrol(a: Action, *, scroll_convention: str = "content") -> dict:
    """Inverse of `androidcontrol_to_action` for the canonical types AndroidControl can express."""
    if a.type in ("click", "long_press"):
        if a.x is None:
            raise ValueError(f"{a}: AndroidControl needs coordinates, not an element index")
        return {"action_type": a.type, "x": _coord(a.x), "y": _coord(a.y)}
    if a.type == "scroll":
        d = a.direction if scroll_convention == "content" else _OPPOSITE[a.direction]
        return {"action_type": "scroll", "direction": d}
    if a.type == "open":
        return {"action_type": "open_app", "app_name": a.text}
    if a.type == "type":
        if a.x is not None and a.y is not None:
            return {"action_type": "type", "text": a.text, "x": _coord(a.x), "y": _coord(a.y)}
        return {"action_type": "input_text", "text": a.text}
    if a.type == "system_button" and a.button in _BUTTON_ACTIONS:
        return {"action_type": _BUTTON_ACTIONS[a.button]}
    if a.type == "wait":
        return {"action_type": "wait"}
    if a.type == "answer":
        return {"action_type": "answer", "text": a.text}
    if a.type == "terminate":
        return {"action_type": "status",
                "goal_status": "complete" if a.status == "success" else "infeasible"}
    raise ValueError(f"action {a} has no AndroidControl equivalent")


# ----------------------------------------------------------------------------- accessibility trees

_FOREST = accessibility_forest_messages()["AndroidAccessibilityForest"]
_RECT = ("left", "top", "right", "bottom")


def parse_accessibility_forest(data: bytes) -> list[UIElement]:
    """UI elements of every node of every window of an AndroidAccessibilityForest, in order.

    Schema: `gui_jax.data.protos.accessibility_forest_messages`. Raises ValueError on malformed input.
    """
    try:
        forest = _FOREST.FromString(data)
    except DecodeError as e:
        raise ValueError(f"malformed AndroidAccessibilityForest ({len(data)} bytes): {e}") from None
    elements: list[UIElement] = []
    for window in forest.windows:
        for node in window.tree.nodes:
            kw: dict[str, Any] = {attr: getattr(node, name) for name, _, attr in NODE_STRINGS + NODE_FLAGS}
            bounds = tuple(getattr(node.bounds_in_screen, side) for side in _RECT)
            elements.append(UIElement(index=len(elements), bounds=bounds, **kw))
    return elements


def encode_accessibility_forest(elements: Sequence[UIElement]) -> bytes:
    """One window holding `elements` as flat nodes (for fixtures; inverse of the parser)."""
    forest = _FOREST()
    nodes = forest.windows.add().tree.nodes
    for uid, e in enumerate(elements):
        node = nodes.add(unique_id=uid)
        for side, v in zip(_RECT, e.bounds):
            setattr(node.bounds_in_screen, side, int(v))
        for name, _, attr in NODE_STRINGS + NODE_FLAGS:
            setattr(node, name, getattr(e, attr))
    return forest.SerializeToString(deterministic=True)


def target_bbox_from_elements(elements: Sequence[UIElement], action: Action) -> Optional[tuple]:
    """Bounds of the element a click/long_press/type(x,y) hits: the smallest-area element
    containing the point, clickable ones preferred; None when nothing contains it."""
    if action.x is None or action.y is None or not elements:
        return None
    hits = [e for e in elements
            if e.bounds[0] <= action.x <= e.bounds[2] and e.bounds[1] <= action.y <= e.bounds[3]]
    if not hits:
        return None
    area = lambda e: (e.bounds[2] - e.bounds[0]) * (e.bounds[3] - e.bounds[1])
    best = min(hits, key=lambda e: (not (e.clickable or e.long_clickable), area(e)))
    return tuple(float(v) for v in best.bounds)


# ----------------------------------------------------------------------------- reading


def _decode_image(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        rgb = im if im.mode == "RGB" else im.convert("RGB")
        return np.asarray(rgb, dtype=np.uint8).copy()


def _episode_from_features(features: dict, path, index: int, *, scroll_convention: str,
                           decode_images: bool, parse_ui_trees: bool,
                           keep_accessibility_trees: bool) -> Episode:
    def err(field, message, step=None):
        return AndroidControlFormatError(path, index, field, message, step=step)

    for name, kind in list(_SCHEMA.items()) + list(_OPTIONAL.items()):
        if name not in features:
            if name in _OPTIONAL:
                continue
            raise err(name, f"missing feature (record has: {', '.join(sorted(features)) or 'none'})")
        if features[name].kind != kind:
            raise err(name, f"expected a {kind}_list feature, got {features[name].kind}")
    f = {k: v.values for k, v in features.items()}
    for name in ("episode_id", "goal"):
        if len(f[name]) != 1:
            raise err(name, f"expected exactly 1 value, got {len(f[name])}")
    try:
        goal = f["goal"][0].decode("utf-8")
    except UnicodeDecodeError as e:
        raise err("goal", f"not UTF-8: {e}") from None
    n_shots, n_actions = len(f["screenshots"]), len(f["actions"])
    for name in ("screenshot_widths", "screenshot_heights") + (
            ("accessibility_trees",) if "accessibility_trees" in f else ()):
        if len(f[name]) != n_shots:
            raise err(name, f"screenshot count mismatch: {len(f[name])} entries for {n_shots} screenshots")
    if n_shots not in (n_actions, n_actions + 1):
        raise err("screenshots", f"screenshot count mismatch: {n_shots} screenshots for {n_actions} "
                  f"actions (need {n_actions + 1}, or {n_actions} without a final screen)")
    if len(f["step_instructions"]) != n_actions:
        raise err("step_instructions", f"{len(f['step_instructions'])} step instructions for "
                  f"{n_actions} actions")

    actions, raw_actions = [], []
    for t, raw in enumerate(f["actions"]):
        try:
            text = raw.decode("utf-8")
            d = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise err("actions", f"bad action JSON {raw[:80]!r}: {e}", step=t) from None
        try:
            actions.append(androidcontrol_to_action(d, scroll_convention=scroll_convention))
        except (ValueError, ActionError) as e:
            raise err("actions", f"{e} in {text[:120]}", step=t) from None
        raw_actions.append(text)
    instructions = []
    for t, raw in enumerate(f["step_instructions"]):
        try:
            instructions.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise err("step_instructions", f"not UTF-8: {e}", step=t) from None

    observations = []
    trees = f.get("accessibility_trees", [b""] * n_shots)
    for t in range(n_shots):
        w, h = int(f["screenshot_widths"][t]), int(f["screenshot_heights"][t])
        if decode_images:
            try:
                image = _decode_image(f["screenshots"][t])
            except Exception as e:  # PIL raises many types for undecodable data
                raise err("screenshots", f"undecodable image ({len(f['screenshots'][t])} bytes): "
                          f"{type(e).__name__}: {e}", step=t) from None
            if image.shape[:2] != (h, w):
                raise err("screenshots", f"image is {image.shape[1]}x{image.shape[0]} but "
                          f"screenshot_widths/heights say {w}x{h}", step=t)
        else:
            image = np.zeros((1, 1, 3), np.uint8)
        elements = []
        if parse_ui_trees and trees[t]:
            try:
                elements = parse_accessibility_forest(trees[t])
            except ValueError as e:
                raise err("accessibility_trees", str(e), step=t) from None
        observations.append(Observation(screenshot=image, ui_elements=elements, goal=goal,
                                        screen_size=(w, h)))
    bboxes = [target_bbox_from_elements(observations[t].ui_elements, a) for t, a in enumerate(actions)]
    ep_id = int(f["episode_id"][0])
    info: dict[str, Any] = {"source": "androidcontrol", "androidcontrol_episode_id": ep_id,
                            "raw_actions": raw_actions}
    if keep_accessibility_trees and "accessibility_trees" in f:
        info["accessibility_trees"] = list(trees)  # raw bytes; not JSON-serialisable as is
    return Episode(episode_id=str(ep_id), goal=goal, observations=observations, actions=actions,
                   target_bboxes=bboxes, step_instructions=instructions, info=info)


PathLike = Union[str, os.PathLike]


def read_androidcontrol(paths: Union[PathLike, Iterable[PathLike]], *, verify_crc: bool = True,
                        episode_ids: Optional[Iterable[int]] = None,
                        scroll_convention: str = "content", decode_images: bool = True,
                        parse_ui_trees: bool = False,
                        keep_accessibility_trees: bool = True) -> Iterator[Episode]:
    """Streams `Episode`s from AndroidControl TFRecord files (GZIP or plain), in file order.

    episode_ids: keep only these (e.g. one split of AndroidControl's splits.json).
    decode_images=False leaves 1x1 placeholder screenshots (metadata-only passes).
    parse_ui_trees: fill Observation.ui_elements from the accessibility forests, and
      Episode.target_bboxes from the element under each point action (else all None).
    Raises AndroidControlFormatError (file, record index, field, step) on any malformed input;
    for per-screenshot fields `step` is the screenshot index (the last one follows the last action).
    """
    if scroll_convention not in ("content", "finger"):
        raise ValueError(f"scroll_convention must be 'content' or 'finger', got {scroll_convention!r}")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    wanted = None if episode_ids is None else {int(i) for i in episode_ids}
    for path in paths:
        for index, record in enumerate(iter_tfrecord(path, verify_crc=verify_crc,
                                                     error_cls=AndroidControlFormatError)):
            try:
                features = parse_example(record)
            except ValueError as e:
                raise AndroidControlFormatError(path, index, None, str(e)) from None
            if wanted is not None:
                ids = features.get("episode_id")
                if ids is not None and ids.kind == "int64" and ids.values and int(ids.values[0]) not in wanted:
                    continue
            yield _episode_from_features(
                features, path, index, scroll_convention=scroll_convention,
                decode_images=decode_images, parse_ui_trees=parse_ui_trees,
                keep_accessibility_trees=keep_accessibility_trees)


def load_androidcontrol_splits(path: PathLike) -> dict[str, list[int]]:
    """AndroidControl's splits.json: {split name: [episode ids]}."""
    with open(path) as fh:
        raw = json.load(fh)
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a JSON object of split name -> episode ids")
    return {str(k): [int(i) for i in v] for k, v in raw.items()}


# ----------------------------------------------------------------------------- writing


def _encode_png(image: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8), mode="RGB").save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def _as_bytes(v) -> bytes:
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)


def androidcontrol_example(ep: dict) -> bytes:
    """Serialized Example for one episode dict (see `write_androidcontrol_tfrecord`)."""
    shots, widths, heights = [], [], []
    for s in ep["screenshots"]:
        if isinstance(s, np.ndarray):
            shots.append(_encode_png(s))
            heights.append(s.shape[0])
            widths.append(s.shape[1])
        else:
            shots.append(bytes(s))
            if "screenshot_widths" not in ep or "screenshot_heights" not in ep:
                with Image.open(io.BytesIO(shots[-1])) as im:
                    widths.append(im.width)
                    heights.append(im.height)
    actions = [a if isinstance(a, (str, bytes)) else json.dumps(a, ensure_ascii=False)
               for a in ep["actions"]]
    features = {
        "episode_id": ("int64", [int(ep["episode_id"])]),
        "goal": ("bytes", [_as_bytes(ep["goal"])]),
        "screenshots": ("bytes", shots),
        "screenshot_widths": ("int64", list(ep.get("screenshot_widths", widths))),
        "screenshot_heights": ("int64", list(ep.get("screenshot_heights", heights))),
        "accessibility_trees": ("bytes", [_as_bytes(t) for t in
                                          ep.get("accessibility_trees", [b""] * len(shots))]),
        "actions": ("bytes", [_as_bytes(a) for a in actions]),
        "step_instructions": ("bytes", [_as_bytes(s) for s in
                                        ep.get("step_instructions", [""] * len(actions))]),
    }
    for name in ep.get("drop_features", ()):  # test hook: write a record lacking a field
        features.pop(name)
    return encode_example(features, packed=ep.get("packed", True))


def write_androidcontrol_tfrecord(path: PathLike, episodes: Iterable[dict], *,
                                  compress: bool = True) -> None:
    """Writes episodes in AndroidControl's schema (GZIP TFRecord of Examples).

    Each dict: episode_id (int), goal (str), screenshots (uint8 HxWx3 arrays, or encoded PNG/JPEG
    bytes), actions (dicts, or JSON strings/bytes written verbatim), step_instructions (str),
    optional accessibility_trees (bytes), screenshot_widths/heights (default: the images' sizes),
    packed (bool, default True: int64 lists packed as TF writes them), drop_features (names).
    """
    write_tfrecord(path, (androidcontrol_example(ep) for ep in episodes), compress=compress)


def episode_to_androidcontrol(ep: Episode, episode_id: Optional[int] = None, *,
                              with_ui_trees: bool = False) -> dict:
    """Episode dict for the writer from a core `Episode` (all its actions must be expressible)."""
    out = {
        "episode_id": int(ep.episode_id) if episode_id is None else int(episode_id),
        "goal": ep.goal,
        "screenshots": [o.screenshot for o in ep.observations],
        "actions": [action_to_androidcontrol(a) for a in ep.actions],
        "step_instructions": list(ep.step_instructions),
    }
    if with_ui_trees:
        out["accessibility_trees"] = [encode_accessibility_forest(o.ui_elements) for o in ep.observations]
    return out


def convert_androidcontrol_to_store(paths: Union[PathLike, Iterable[PathLike]], root: PathLike, *,
                                    episode_ids: Optional[Iterable[int]] = None,
                                    parse_ui_trees: bool = True, keep_raw_trees: bool = False,
                                    verify_crc: bool = True) -> int:
    """Converts AndroidControl TFRecords into our episode folders under `root` (+ index.json).

    Returns the number of episodes written. Raw accessibility forests are kept base64-encoded in
    info["accessibility_trees_b64"] when `keep_raw_trees` (they are large).
    """
    import base64

    from gui_jax.core.serialize import save_episode
    from gui_jax.data.episode_store import write_store_index

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    count = 0
    for ep in read_androidcontrol(paths, verify_crc=verify_crc, episode_ids=episode_ids,
                                  parse_ui_trees=parse_ui_trees,
                                  keep_accessibility_trees=keep_raw_trees):
        trees = ep.info.pop("accessibility_trees", None)
        if keep_raw_trees and trees is not None:
            ep.info["accessibility_trees_b64"] = [base64.b64encode(t).decode("ascii") for t in trees]
        save_episode(ep, root / f"{count:06d}_{ep.episode_id}")
        count += 1
    write_store_index(root)
    return count
