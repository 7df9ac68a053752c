"""Greedy generations memoised by prompt, for one evaluation of fixed weights.

SOP, step metrics and the greedy online trial ask the policy for the same prompts many times: with
no history in the prompt (the quickstart), the first step of every held-out task is one prompt for
all three, and a step reached by correct actions shows the expert's screen again. A greedy
response is a function of the prompt and the weights, so each distinct prompt is decoded once.
Sampled calls (temperature > 0) pass through untouched. A memo must not outlive a weight update.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Optional, Sequence

from gui_jax.rl.policy import Generation, Prompt


def prompt_key(prompt: Prompt, max_new_tokens: Optional[int]) -> str:
    """A digest of the chat messages, every image's shape, dtype and bytes, and the token budget."""
    messages, images = prompt
    h = hashlib.sha256(json.dumps(messages, sort_keys=True, default=repr).encode())
    for im in images:
        h.update(f"{im.shape}{im.dtype}".encode())
        h.update(im.tobytes())
    h.update(repr(max_new_tokens).encode())
    return h.hexdigest()


class GreedyMemo:
    """Wraps a Policy: `generate(temperature=0)` decodes each distinct prompt once; the rest delegates."""

    def __init__(self, policy):
        self.policy = policy
        self._memo: dict[str, Generation] = {}
        self.hits = self.misses = 0

    def generate(self, prompts: Sequence[Prompt], *, temperature: float, seed: int,
                 max_new_tokens: Optional[int] = None) -> list[Generation]:
        if temperature > 0:
            return self.policy.generate(prompts, temperature=temperature, seed=seed, max_new_tokens=max_new_tokens)
        keys = [prompt_key(p, max_new_tokens) for p in prompts]
        todo: dict[str, int] = {}
        for i, k in enumerate(keys):
            if k not in self._memo and k not in todo:
                todo[k] = i
        if todo:
            gens = self.policy.generate([prompts[i] for i in todo.values()], temperature=0.0, seed=seed,
                                        max_new_tokens=max_new_tokens)
            self._memo.update(zip(todo, gens))
        self.misses += len(todo)
        self.hits += len(keys) - len(todo)
        # copies: callers may attach fields to a generation; the memo's own stays as decoded
        return [dataclasses.replace(self._memo[k]) for k in keys]

    def __getattr__(self, name):
        return getattr(self.policy, name)
