"""The policy interface the rollout code talks to (model-agnostic).

A prompt is (chat messages, images). A `Generation` keeps the exact prompt and response token
ids and the sampler's per-token logprobs, so training recomputes logprobs on the very same tokens
(no re-tokenisation drift).
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Protocol, Sequence

import numpy as np

Prompt = tuple[list[dict], list[np.ndarray]]


@dataclasses.dataclass
class Generation:
    text: str
    prompt_ids: np.ndarray          # int32 [P]
    response_ids: np.ndarray        # int32 [R] (includes the end-of-turn token when emitted)
    logprobs: np.ndarray            # float32 [R], log π_old of each response token
    pixel_values: Optional[np.ndarray] = None   # [patches, dim] for the prompt's images
    image_grid_thw: Optional[np.ndarray] = None  # [n_images, 3]


class Policy(Protocol):
    def generate(self, prompts: Sequence[Prompt], *, temperature: float, seed: int,
                 max_new_tokens: Optional[int] = None) -> list[Generation]:
        """One response per prompt. temperature 0 = greedy."""
        ...

    def encode(self, prompt: Prompt, response: str) -> Generation:
        """Tokenises a given response (expert/patched text) for a prompt; logprobs are zeros."""
        ...
