"""The agent being trained: model (split once into graphdef + params), tokenizer, processor, policy.

Config (`config.model`): preset ('tiny' | '3b' | ...), or checkpoint (a Hugging Face directory);
tokenizer ('tiny' | 'qwen25' | a tokenizer.json path; default: the checkpoint's tokenizer.json or
the preset's); image min/max pixels; max_new_tokens.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Optional

import jax
import jax.numpy as jnp
from flax import nnx

from gui_jax.models.processor import ImageProcessor
from gui_jax.models.qwen2_5_vl.config import preset
from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration
from gui_jax.models.tokenizer import HFTokenizer, qwen25_tokenizer, tiny_tokenizer
from gui_jax.rl.jax_policy import JaxPolicy


def load_tokenizer(name: str, checkpoint: Optional[str] = None):
    if name == "tiny":
        return tiny_tokenizer()
    if name == "qwen25":
        return qwen25_tokenizer()
    if name == "auto":
        if checkpoint and os.path.exists(os.path.join(checkpoint, "tokenizer.json")):
            return HFTokenizer.from_file(os.path.join(checkpoint, "tokenizer.json"))
        return qwen25_tokenizer()
    if os.path.exists(name):
        return HFTokenizer.from_file(name)
    raise ValueError(f"unknown tokenizer {name!r}: use 'tiny', 'qwen25', 'auto' or a tokenizer.json path")


class Agent:
    """Holds params as a pytree; `model()` rebuilds the module view for eval/sampling."""

    def __init__(self, model_cfg, *, seed: int = 0):
        self.cfg = model_cfg.model
        mcfg = self.cfg
        if mcfg.get("checkpoint"):
            from gui_jax.models.qwen2_5_vl.hf_io import load_hf_checkpoint
            model, self.model_config = load_hf_checkpoint(mcfg.checkpoint)
        else:
            self.model_config = preset(mcfg.preset)
            text_over = {k: mcfg[k] for k in ("num_hidden_layers", "intermediate_size")
                         if mcfg.get(k)}
            vis_over = {"depth": mcfg.vision_depth} if mcfg.get("vision_depth") else {}
            if vis_over.get("depth") and max(self.model_config.vision.fullatt_block_indexes) >= vis_over["depth"]:
                vis_over["fullatt_block_indexes"] = (vis_over["depth"] - 1,)
            if text_over or vis_over:
                self.model_config = self.model_config.replace(
                    text=dataclasses.replace(self.model_config.text, **text_over),
                    vision=dataclasses.replace(self.model_config.vision, **vis_over))
            model = Qwen25VLForConditionalGeneration(self.model_config, rngs=nnx.Rngs(seed))
        tok_name = mcfg.get("tokenizer", "auto")
        if tok_name == "auto" and not mcfg.get("checkpoint") and mcfg.preset == "tiny":
            tok_name = "tiny"
        self.tokenizer = load_tokenizer(tok_name, mcfg.get("checkpoint"))
        if self.tokenizer.vocab_size > self.model_config.text.vocab_size:
            raise ValueError(f"tokenizer has {self.tokenizer.vocab_size} ids but the model only "
                             f"{self.model_config.text.vocab_size}")
        if self.tokenizer.image_pad_id != self.model_config.image_token_id:
            raise ValueError(f"tokenizer image pad id {self.tokenizer.image_pad_id} != model "
                             f"image_token_id {self.model_config.image_token_id}")
        self.processor = ImageProcessor(min_pixels=mcfg.get("min_pixels", 56 * 56),
                                        max_pixels=mcfg.get("max_pixels", 28 * 28 * 1280))
        self.graphdef, self.params, self.rest = nnx.split(model, nnx.Param, ...)
        self.policy = JaxPolicy(model, self.tokenizer, self.processor,
                                max_new_tokens=mcfg.get("max_new_tokens", 48),
                                batch_size=mcfg.get("sample_batch_size", 32))

    def model(self, params=None) -> nnx.Module:
        return nnx.merge(self.graphdef, self.params if params is None else params, self.rest)

    def set_params(self, params) -> None:
        """New trained params; the sampler gets them without recompiling."""
        self.params = params
        self.policy.update_weights(nnx.state(self.model()))

    def copy_params(self):
        return jax.tree.map(jnp.copy, self.params)

    def num_params(self) -> int:
        return sum(x.size for x in jax.tree.leaves(self.params))
