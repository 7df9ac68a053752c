"""Grounding samples for SFT, built from the training screens themselves.

GUI agents learn to ground with referring-expression data beside the task trajectories (UI-TARS and
OS-Atlas pre-train on "click <description>" → element pairs). Here each item is one labelled element
of a training screen, as the prompt shows it: instruction `Tap on '<label>'.` (configurable), no
history, target `click(element=k)`. In a task episode the element to click is nearly always in the
same place for a template, so a small model can fit the trajectories by position; here every
labelled line of every screen is a target, and only reading the label finds it.

An element is used only when its label names exactly one shown line (no other shown line contains
it), so every item has one right answer.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from gui_jax.core.types import Episode
from gui_jax.rl.prompting import PromptConfig, shown_elements

DEFAULT_INSTRUCTION = "Tap on '{label}'."


def element_label(e) -> str:
    """The words an instruction uses for an element: its text, else its description, one line."""
    return " ".join((e.text or e.content_desc or "").split())


def grounding_candidates(episodes: Sequence[Episode], pcfg: PromptConfig) -> list[tuple[int, int, int, str]]:
    """(episode index, step, element index, label) for every uniquely labelled element shown in the
    prompt of every step's observation, in episode / step / line order."""
    out = []
    for e, ep in enumerate(episodes):
        for t in range(len(ep.actions)):
            shown = shown_elements(ep.observations[t], pcfg)
            labels = [element_label(el) for el in shown]
            lines = [" ".join(f"{el.content_desc} {el.text}".split()) for el in shown]
            for el, label in zip(shown, labels):
                if label and sum(label in line for line in lines) == 1:
                    out.append((e, t, int(el.index), label))
    return out


def sample_grounding(episodes: Sequence[Episode], pcfg: PromptConfig, *, n_expert_steps: int, fraction: float,
                     seed: int = 0) -> list[tuple[int, int, int, str]]:
    """The grounding items mixed into SFT: `fraction` of all items (expert steps + grounding) are
    grounding items: every candidate as many whole times as fit, the rest drawn without replacement
    by `seed`."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"sft.grounding_fraction must be in [0, 1), got {fraction}")
    if fraction == 0.0:
        return []
    cands = grounding_candidates(episodes, pcfg)
    if not cands:
        raise ValueError("sft.grounding_fraction > 0 but no training screen shows a uniquely labelled element "
                         "(grounding needs the UI text in the prompt: prompt.observation ui_text or both)")
    n = int(round(n_expert_steps * fraction / (1.0 - fraction)))
    rng = np.random.default_rng([int(seed), 7])
    whole, rest = divmod(n, len(cands))
    pick = sorted(rng.choice(len(cands), size=rest, replace=False).tolist())
    return cands * whole + [cands[i] for i in pick]


def grounding_instruction(label: str, template: Optional[str] = None) -> str:
    return (template or DEFAULT_INSTRUCTION).format(label=label)
