"""The agent being trained: model (split once into graphdef + params), tokenizer, processor, policy.

Config (`config.model`): preset ('tiny' | '3b' | ...), or checkpoint (a Hugging Face directory);
tokenizer ('tiny' | 'qwen25' | a tokenizer.json path; default: the checkpoint's tokenizer.json or
the preset's); image min/max pixels; max_new_tokens.

With a `mesh` block in the config (train/config_blocks.mesh_block) the agent is sharded: the params
(float32 masters by default) are created directly in their shards (`jit` with out_shardings) or read
from the checkpoint straight into them; the model computes in `compute_dtype`; the sampler holds a
copy cast to `sampler_dtype` and resharded on device to the sampler mesh after every update.
Without a mesh block everything stays on the default device, as stored.
"""
from __future__ import annotations

import dataclasses
import os
from functools import partial
from typing import Optional

import jax
import jax.numpy as jnp
from flax import nnx

from gui_jax.models import sharding as shd
from gui_jax.models.processor import ImageProcessor
from gui_jax.models.qwen2_5_vl.config import Qwen25VLConfig, preset
from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration
from gui_jax.models.builtin import resolve_checkpoint
from gui_jax.models.tokenizer import (TINY_PHONESIM_NUM_SP_MODEL_PATH, TINY_PHONESIM_SP_MODEL_PATH, TINY_SP_MODEL_PATH,
                                      HFTokenizer, SentencePieceTokenizer, qwen25_tokenizer, tiny_tokenizer)
from gui_jax.rl.jax_policy import JaxPolicy
from gui_jax.rl.names import TINY_TOKENIZERS


# the shipped tiny SentencePiece vocabularies, by config name (the names: TINY_TOKENIZERS in gui_jax/rl/names.py,
# which config validation reads without loading JAX)
TINY_VOCABULARIES = dict(zip(TINY_TOKENIZERS, (TINY_SP_MODEL_PATH, TINY_PHONESIM_SP_MODEL_PATH,
                                               TINY_PHONESIM_NUM_SP_MODEL_PATH), strict=True))


def load_tokenizer(name: str, checkpoint: Optional[str] = None):
    if name in TINY_VOCABULARIES:
        return tiny_tokenizer(TINY_VOCABULARIES[name])
    if name == "qwen25":
        return qwen25_tokenizer()
    if name == "auto":
        if checkpoint and os.path.exists(os.path.join(checkpoint, "tokenizer.json")):
            return HFTokenizer.from_file(os.path.join(checkpoint, "tokenizer.json"))
        if checkpoint and os.path.exists(os.path.join(checkpoint, "tokenizer.model")):
            # an exported tiny agent carries its SentencePiece vocabulary (jobs/export.py)
            return SentencePieceTokenizer.from_file(os.path.join(checkpoint, "tokenizer.model"))
        return qwen25_tokenizer()
    if os.path.exists(name):
        if name.endswith(".model"):
            return SentencePieceTokenizer.from_file(name)
        return HFTokenizer.from_file(name)
    raise ValueError(f"unknown tokenizer {name!r}: use 'tiny', 'tiny_phonesim', 'tiny_phonesim_num', 'qwen25', 'auto', "
                     f"a tokenizer.json path or a SentencePiece .model path")


def vocabulary_name(tokenizer: str, preset: str, checkpoint: str = "") -> Optional[str]:
    """The vocabulary a model config trains with, as a comparable name (None where it comes from a HF
    checkpoint directory): stage checkpoints are only valid under the vocabulary they were trained with."""
    if tokenizer == "auto":
        if checkpoint:
            return None
        return "tiny" if preset == "tiny" else "qwen25"
    return os.path.abspath(tokenizer) if os.path.exists(tokenizer) else tokenizer


class Agent:
    """Holds params as a pytree; `model()` rebuilds the module view for eval/sampling."""

    def __init__(self, model_cfg, *, seed: int = 0, mesh=None):
        self.cfg = model_cfg.model
        mcfg = self.cfg
        self.mesh_cfg = model_cfg.get("mesh")
        if self.mesh_cfg is not None:
            shd.maybe_init_distributed(self.mesh_cfg.get("distributed", "auto"))
        self.mesh = mesh if mesh is not None else (
            shd.mesh_from_config(self.mesh_cfg) if self.mesh_cfg is not None else None)
        self.rules = shd.rules_by_name(self.mesh_cfg.rules) if self.mesh_cfg is not None else shd.DEFAULT_RULES
        self.compute_dtype = self.mesh_cfg.compute_dtype if self.mesh_cfg is not None else None
        # Without a mesh block the params are float32 masters, a checkpoint stored in bfloat16 included: Adam steps
        # of lr ~1e-4 are below half a bfloat16 ulp of most weights (~2e-4 at |w| ~ 0.05) and would round away.
        dtypes = ({"param_dtype": "float32"} if self.mesh_cfg is None else
                  {"dtype": self.mesh_cfg.compute_dtype, "param_dtype": self.mesh_cfg.param_dtype})
        checkpoint = resolve_checkpoint(mcfg.get("checkpoint", ""))   # "builtin:<name>" -> the shipped folder
        if checkpoint:
            from gui_jax.models.qwen2_5_vl.hf_io import load_hf_checkpoint
            placer = shd.loader_shardings(self.mesh, self.rules) if self.mesh is not None else None
            model, self.model_config = load_hf_checkpoint(checkpoint, shardings=placer, **dtypes,
                                                          **runtime_options(mcfg))
        else:
            self.model_config = model_config_from(mcfg, **dtypes)
            if self.mesh is not None:
                model = init_sharded_model(self.model_config, seed, self.mesh, self.rules)
            else:
                model = Qwen25VLForConditionalGeneration(self.model_config, rngs=nnx.Rngs(seed))
        # None = the vocabulary of the HF checkpoint directory ("auto" reads it there)
        self.vocabulary = vocabulary_name(mcfg.get("tokenizer", "auto"), mcfg.get("preset", "tiny"), checkpoint)
        self.tokenizer = load_tokenizer(self.vocabulary or "auto", checkpoint)
        if self.tokenizer.vocab_size > self.model_config.text.vocab_size:
            raise ValueError(f"tokenizer has {self.tokenizer.vocab_size} ids but the model only "
                             f"{self.model_config.text.vocab_size}")
        if self.tokenizer.image_pad_id != self.model_config.image_token_id:
            raise ValueError(f"tokenizer image pad id {self.tokenizer.image_pad_id} != model "
                             f"image_token_id {self.model_config.image_token_id}")
        self.processor = ImageProcessor(min_pixels=mcfg.get("min_pixels", 56 * 56),
                                        max_pixels=mcfg.get("max_pixels", 28 * 28 * 1280))
        self.graphdef, self.params, self.rest = nnx.split(model, nnx.Param, ...)
        self._to_sampler = None
        if self.mesh is not None:
            self.sampler_mesh = shd.mesh_from_config(self.mesh_cfg, devices=self.mesh.devices.ravel().tolist(),
                                                     role="sampler")
            sampler_shardings = shd.state_shardings(self.params, self.sampler_mesh, self.rules)
            dtype = jnp.dtype(self.mesh_cfg.get("sampler_dtype", self.mesh_cfg.compute_dtype))
            # On device: cast + reshard in one jitted program (no host round trip of the weights).
            self._to_sampler = jax.jit(lambda p: _cast_floating(p, dtype), out_shardings=sampler_shardings)
        self.policy = JaxPolicy(self._sampler_model(self.params), self.tokenizer, self.processor,
                                max_new_tokens=mcfg.get("max_new_tokens", 48),
                                max_prompt_tokens=mcfg.get("max_prompt_tokens", 8192),
                                batch_size=mcfg.get("sample_batch_size", 32),
                                batch_bucketing=mcfg.get("sample_batch_buckets", "powers_of_4"),
                                prefill_chunk=mcfg.get("prefill_chunk") or None,
                                cache_dtype=mcfg.get("kv_cache_dtype") or None)
        if self.mesh is not None:
            # Trace the sampler's programs inside the sampler mesh's activation context (per-shard kernels such
            # as splash attention need it; `sharding.constrain` pins activations to it).
            inner = self.policy.sampler.generate

            def generate_on_mesh(*args, **kwargs):
                with shd.activation_sharding(self.sampler_mesh, self.rules):
                    return inner(*args, **kwargs)
            self.policy.sampler.generate = generate_on_mesh

    def model(self, params=None) -> nnx.Module:
        return nnx.merge(self.graphdef, self.params if params is None else params, self.rest)

    def _sampler_model(self, params) -> nnx.Module:
        return self.model(params if self._to_sampler is None else self._to_sampler(params))

    def set_params(self, params) -> None:
        """New trained params; the sampler gets them (resharded / cast on device) without recompiling."""
        self.params = params
        self.policy.update_weights(nnx.state(self._sampler_model(params)))

    def copy_params(self):
        """An independent copy (the Updater donates its params), in the same shards."""
        return _copy_tree(self.params)

    def param_shardings(self):
        """NamedSharding per param (None without a mesh)."""
        return None if self.mesh is None else shd.state_shardings(self.params, self.mesh, self.rules)

    def num_params(self) -> int:
        return sum(x.size for x in jax.tree.leaves(self.params))


@jax.jit
def _copy_tree(tree):
    return jax.tree.map(jnp.copy, tree)


def _cast_floating(tree, dtype):
    return jax.tree.map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree)


def model_config_from(mcfg, dtype: Optional[str] = None, param_dtype: Optional[str] = None):
    """The preset's Qwen25VLConfig with the config's depth / width / head / RoPE-base overrides and dtypes."""
    cfg = preset(mcfg.preset)
    text_over = {k: mcfg[k] for k in ("num_hidden_layers", "intermediate_size", "num_key_value_heads",
                                      "hidden_size", "num_attention_heads") if mcfg.get(k)}
    if mcfg.get("rope_theta"):
        text_over["rope_theta"] = float(mcfg.rope_theta)
    vis_over = {"depth": mcfg.vision_depth} if mcfg.get("vision_depth") else {}
    if mcfg.get("hidden_size"):   # the vision tower's output is the text stream's input
        vis_over["out_hidden_size"] = int(mcfg.hidden_size)
    if vis_over.get("depth") and max(cfg.vision.fullatt_block_indexes) >= vis_over["depth"]:
        vis_over["fullatt_block_indexes"] = (vis_over["depth"] - 1,)
    if text_over or vis_over:
        cfg = cfg.replace(text=dataclasses.replace(cfg.text, **text_over),
                          vision=dataclasses.replace(cfg.vision, **vis_over))
    top = {k: v for k, v in (("dtype", dtype), ("param_dtype", param_dtype)) if v}
    top.update(runtime_options(mcfg))
    return cfg.replace(**top) if top else cfg


def runtime_options(mcfg) -> dict:
    """Model runtime options set in the config's model block (attention kernel, layer scan, remat policy,
    per-row images in training batches)."""
    fields = {f.name for f in dataclasses.fields(Qwen25VLConfig)}
    return {k: mcfg[k] for k in ("attention_impl", "scan_layers", "remat_policy", "vision_per_row")
            if k in fields and mcfg.get(k) is not None}


def abstract_model(model_config, seed: int = 0) -> nnx.Module:
    """The model with ShapeDtypeStruct leaves (no memory): for shardings and ahead-of-time compilation."""
    return nnx.eval_shape(lambda: Qwen25VLForConditionalGeneration(model_config, rngs=nnx.Rngs(seed)))


def init_sharded_model(model_config, seed: int, mesh, rules=shd.DEFAULT_RULES) -> nnx.Module:
    """A freshly initialised model whose params are created directly in their shards (never whole on one
    device). The values depend only on the seed, not on the mesh."""
    graphdef, abstract_state = nnx.split(abstract_model(model_config, seed))
    shardings = shd.state_shardings(abstract_state, mesh, rules)

    @partial(jax.jit, out_shardings=shardings)
    def init():
        return nnx.state(Qwen25VLForConditionalGeneration(model_config, rngs=nnx.Rngs(seed)))
    return nnx.merge(graphdef, init())
