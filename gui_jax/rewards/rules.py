"""Rule-based step rewards (docs/algorithms.md §2, UI-S1).

`paper` preset: r = 0.1·f + 0.4·1[f]·type + 0.5·1[f·type]·exact.
`code` preset:  r = 0.1·f + 0.9·s, s = 1 exact, 0.5 type only, 0.1 parsed wrong type, 0 unparsable.
f = 1 iff the response parsed and (when thoughts are required) its thought is non-empty.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import jax
import jax.numpy as jnp

from gui_jax.core.dialects import ActionParseError, parse_response
from gui_jax.core.matcher import BBox, match_action
from gui_jax.core.types import Action
from gui_jax.rewards.names import REWARD_PRESETS  # noqa: F401 - re-exported (import-light names)

# Dialects whose response format has a thought field (<think>…</think> / "Thought: …"); there the
# format reward asks for a non-empty thought by default, as UI-S1 trains. ui_genie's thought is
# optional free text, so a bare tool call is well formed.
THOUGHT_DIALECTS = ("ui_s1", "uitars", "mobilerl")


def dialect_requires_thought(dialect: str) -> bool:
    """Default of `require_thought` for a dialect: True iff its format has a thought field."""
    return dialect in THOUGHT_DIALECTS


def _check_preset(preset: str) -> None:
    if preset not in REWARD_PRESETS:
        raise ValueError(f"unknown step-reward preset {preset!r}; known: {REWARD_PRESETS}")


def step_reward_from_flags(parsed, format_ok, type_match, exact_match, preset: str = "paper"):
    """Rewards from per-step flags. All inputs [N] (bool or {0,1}); returns float32 [N]."""
    _check_preset(preset)
    return _step_reward_jit(jnp.asarray(parsed, jnp.float32), jnp.asarray(format_ok, jnp.float32),
                            jnp.asarray(type_match, jnp.float32),
                            jnp.asarray(exact_match, jnp.float32), preset)


@functools.partial(jax.jit, static_argnames="preset")
def _step_reward_jit(parsed, f, tm, em, preset):
    # A step only earns type/exact credit if it parsed; exact implies type.
    tm = tm * parsed
    em = em * tm
    if preset == "paper":
        return 0.1 * f + 0.4 * f * tm + 0.5 * f * tm * em
    s = jnp.where(em > 0, 1.0, jnp.where(tm > 0, 0.5, jnp.where(parsed > 0, 0.1, 0.0)))
    return 0.1 * f + 0.9 * s


@dataclass(frozen=True)
class StepJudgement:
    """What the rule reward saw in one response."""

    reward: float
    parsed: bool
    format_ok: bool
    type_match: bool
    exact_match: bool
    thought: str = ""
    action: Optional[Action] = None
    error: str = ""


def judge_response(text: str, dialect: str, expert: Action, *, image_size: tuple[float, float],
                   expert_bbox: Optional[BBox] = None, preset: str = "paper",
                   require_thought: bool = True, bbox_scale: float = 1.2,
                   dist_threshold: float = 0.04,
                   elements: Optional[Sequence[BBox]] = None,
                   pred_transform: Optional[Callable[[Action], Action]] = None,
                   text_rule: str = "substring", ui: Optional[Sequence] = None) -> StepJudgement:
    """Parses `text` in `dialect`, matches against `expert`, returns reward and flags.

    pred_transform maps the parsed action into the expert's coordinate frame (e.g. model image
    pixels → screen pixels) before matching; `image_size` is that frame's size. ui: the screen's element tree
    (a click must reach the expert's element: match_action).
    """
    _check_preset(preset)
    try:
        thought, action = parse_response(text, dialect)
    except ActionParseError as e:
        return StepJudgement(0.0, False, False, False, False, error=str(e))
    format_ok = bool(thought.strip()) if require_thought else True
    matched_action = pred_transform(action) if pred_transform is not None else action
    tm, em = match_action(matched_action, expert, image_size=image_size, expert_bbox=expert_bbox,
                          bbox_scale=bbox_scale, dist_threshold=dist_threshold, elements=elements,
                          text_rule=text_rule, ui=ui)
    r = float(step_reward_from_flags([True], [format_ok], [tm], [em], preset)[0])
    return StepJudgement(r, True, format_ok, tm, em, thought=thought, action=action)
