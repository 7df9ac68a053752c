"""`Policy` backed by our Flax Qwen2.5-VL: chat template → tokens/patches → jitted sampler.

Shapes are bucketed by the sampler (batch, prompt length, new tokens, image patches / vision blocks), so a
rollout compiles one prefill and one decode program per bucket visited. Long prompts: `prefill_chunk`
runs them through the KV cache in fixed-size chunks; `cache_dtype='bfloat16'` halves the cache.
"""
from __future__ import annotations

import contextlib
from typing import Optional, Sequence

import numpy as np

from gui_jax.models.chat import build_inputs
from gui_jax.models.processor import ImageProcessor
from gui_jax.models.sampler import Sampler
from gui_jax.rl.names import BATCH_BUCKETINGS
from gui_jax.rl.policy import Generation, Prompt


class ChatEncoder:
    """Chat template → token ids and image patches, without the model: picklable, so data-loading worker
    processes can encode training items exactly as the policy does (`JaxPolicy.encode` delegates here)."""

    def __init__(self, tokenizer, image_processor: ImageProcessor, *, default_system: Optional[str] = None,
                 max_prompt_tokens: int = 8192):
        self.tokenizer, self.image_processor = tokenizer, image_processor
        self.default_system, self.max_prompt_tokens = default_system, max_prompt_tokens
        self.end_id = tokenizer.im_end_id

    def prompt_inputs(self, prompt: Prompt) -> dict:
        messages, images = prompt
        for k, im in enumerate(images):
            h, w = im.shape[:2]
            if self.image_processor.resized_size(h, w) != (h, w):
                # The model's coordinates live in the processed image; matching uses the
                # screenshot's size, so the two must be the same frame.
                raise ValueError(f"screenshot {k} is {w}x{h}, which the processor would resize to "
                                 f"{self.image_processor.resized_size(h, w)[::-1]}; render observations at "
                                 f"a multiple of {self.image_processor.factor} within min/max pixels")
        inputs = build_inputs(messages, list(images), self.tokenizer, self.image_processor,
                              add_generation_prompt=True, default_system=self.default_system)
        if inputs["input_ids"].size > self.max_prompt_tokens:
            raise ValueError(f"prompt has {inputs['input_ids'].size} tokens > max_prompt_tokens "
                             f"{self.max_prompt_tokens}; lower history_turns or the image size")
        return inputs

    def encode(self, prompt: Prompt, response: str) -> Generation:
        inputs = self.prompt_inputs(prompt)
        resp = np.asarray(self.tokenizer.encode(response) + [self.end_id], np.int32)
        return Generation(text=response, prompt_ids=inputs["input_ids"], response_ids=resp,
                          logprobs=np.zeros(resp.shape, np.float32),
                          pixel_values=inputs["pixel_values"] if len(prompt[1]) else None,
                          image_grid_thw=inputs["image_grid_thw"] if len(prompt[1]) else None)


def policy_batch_buckets(batch_size: int, bucketing: str = "powers_of_4") -> tuple[int, ...]:
    """Sampler batch buckets for calls of at most `batch_size` prompts. powers_of_4 (powers_of_2): the powers of 4
    (2) below it, then batch_size; full: batch_size alone. Each (batch, prompt length) pair compiles a prefill and
    a decode program (~1.5-2 s each for the tiny model on one CPU core); a rollout's or an evaluation's batch
    shrinks as episodes end, so powers of 2 compile up to twice as many for at most 2x less padding, and `full`
    one batch size for padding every call up to it. Measured (one core, beside another run; one or two runs
    each): `full` evaluates the quickstart's SFT faster (configs/evaluate.py 128 / 134 s -> 111 / 117 s: compile
    55 -> 21 s outweighs the padding) but slows its RL stage (rollouts of 8 groups padded to 32 rows: 315 -> 394
    s). powers_of_2 fits a GRPO call's distinct prompts (8 tasks x 4 rollouts prefill 8 prompts, which powers_of_4
    pads to 16): the quickstart's rollouts use it, its evaluation `full` (eval.sample_batch_buckets)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if bucketing not in BATCH_BUCKETINGS:
        raise ValueError(f"batch bucketing {bucketing!r}: expected one of {', '.join(BATCH_BUCKETINGS)}")
    if bucketing == "full":
        return (batch_size,)
    base = 2 if bucketing == "powers_of_2" else 4
    return tuple(base ** k for k in range(32) if base ** k < batch_size) + (batch_size,)


class JaxPolicy:
    """Generates responses for chat prompts; `update_weights` syncs trained params (no recompile)."""

    def __init__(self, model, tokenizer, image_processor: ImageProcessor, *, max_new_tokens: int = 48,
                 batch_size: int = 32, top_p: float = 1.0, top_k: int = 0,
                 default_system: Optional[str] = None, max_prompt_tokens: int = 8192,
                 prefill_chunk: Optional[int] = None, cache_dtype: Optional[str] = None,
                 batch_bucketing: str = "powers_of_4"):
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.top_p, self.top_k = top_p, top_k
        self.sampler = Sampler(model, eos_ids=[tokenizer.im_end_id, tokenizer.eos_id],
                               pad_id=tokenizer.pad_id, detokenize=tokenizer.decode,
                               prefill_chunk=prefill_chunk or None, cache_dtype=cache_dtype or None,
                               batch_buckets=policy_batch_buckets(batch_size, batch_bucketing))
        self.model_cfg = model.cfg
        self.encoder = ChatEncoder(tokenizer, image_processor, default_system=default_system,
                                   max_prompt_tokens=max_prompt_tokens)

    def update_weights(self, model_or_state) -> None:
        self.sampler.update_weights(model_or_state)

    @contextlib.contextmanager
    def batch_bucketing(self, bucketing: str):
        """Within the block, sampler calls pad their batch as `bucketing` (policy_batch_buckets; '' = unchanged):
        an evaluation's length-sorted calls are mostly full, so `full` compiles one program per prompt length."""
        if not bucketing:
            yield
            return
        before = self.sampler.batch_buckets
        self.sampler.batch_buckets = policy_batch_buckets(self.batch_size, bucketing)
        try:
            yield
        finally:
            self.sampler.batch_buckets = before

    def prompt_inputs(self, prompt: Prompt) -> dict:
        return self.encoder.prompt_inputs(prompt)

    def encode(self, prompt: Prompt, response: str) -> Generation:
        return self.encoder.encode(prompt, response)

    def generate(self, prompts: Sequence[Prompt], *, temperature: float, seed: int,
                 max_new_tokens: Optional[int] = None) -> list[Generation]:
        """One response per prompt. Identical prompts of a call (a GRPO group's rollouts share their first
        screen, and their later ones while they agree) are prefilled once; each still samples its own.
        A call of more than `batch_size` prompts is chunked in order of prompt length, so each chunk pads to
        its own longest prompt (an evaluation's mixed templates padded to 47 % real tokens in call order)."""
        encoded = [self.prompt_inputs(p) for p in prompts]
        order = list(range(len(prompts)))
        if len(prompts) > self.batch_size:
            order.sort(key=lambda i: encoded[i]["input_ids"].size)
        out: list[Optional[Generation]] = [None] * len(prompts)
        for start in range(0, len(prompts), self.batch_size):
            where = order[start:start + self.batch_size]
            chunk = [encoded[i] for i in where]
            same: dict = {}
            for i, c in enumerate(chunk):
                pixels = c["pixel_values"].tobytes() if c["image_grid_thw"].size else b""
                same.setdefault((c["input_ids"].tobytes(), pixels), []).append(i)
            groups = list(same.values())
            unique = [chunk[g[0]] for g in groups]
            has_images = any(c["image_grid_thw"].size for c in unique)
            pv = np.concatenate([c["pixel_values"] for c in unique]) if has_images else None
            grid = np.concatenate([c["image_grid_thw"] for c in unique]) if has_images else None
            res = self.sampler.generate([c["input_ids"] for c in unique], pixel_values=pv,
                                        image_grid_thw=grid,
                                        max_new_tokens=max_new_tokens or self.max_new_tokens,
                                        temperature=float(temperature), top_p=self.top_p, top_k=self.top_k,
                                        seed=seed * 1009 + start,
                                        copies=None if len(groups) == len(chunk) else [len(g) for g in groups])
            for row, i in enumerate(i for g in groups for i in g):
                c = chunk[i]
                toks, lps = res.row(row)
                body = toks[:-1] if toks and toks[-1] in self.sampler.eos_ids else toks
                out[where[i]] = Generation(text=self.tokenizer.decode(body, skip_special_tokens=False),
                                            prompt_ids=c["input_ids"], response_ids=np.asarray(toks, np.int32),
                                            logprobs=np.asarray(lps, np.float32),
                                            pixel_values=c["pixel_values"] if c["image_grid_thw"].size else None,
                                            image_grid_thw=c["image_grid_thw"] if c["image_grid_thw"].size else None)
        return out
