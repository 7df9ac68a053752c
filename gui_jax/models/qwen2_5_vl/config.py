"""Qwen2.5-VL configuration: frozen (hashable, jit-static) dataclasses, HF config.json I/O and presets.

`Qwen25VLConfig.from_hf_dict(d)` reads a Hugging Face `config.json` dict in either layout:
transformers 5 (`text_config`, `vision_config`, `rope_parameters.mrope_section`) or legacy (text fields at the
top level, `rope_scaling` / `rope_theta`). `to_hf_dict()` writes the transformers 5 layout.

Presets (`preset(name)`): 'tiny' (the embedded default; trains on a CPU), '3b', '7b', '32b', '72b' (public shapes;
these set scan_layers=True). Runtime options (attention_impl, scan_layers, remat_policy) are not part of the HF
config.json: pass them to from_hf_dict(..., **runtime) / load_hf_checkpoint or `cfg.replace(...)`.
The tiny vocabulary is `TINY_VOCAB_SIZE` ids: `TINY_BASE_VOCAB` ordinary tokens followed by the 22 Qwen special
tokens in Qwen's own order (`QWEN_SPECIAL_TOKENS`), so `TINY_SPECIAL_IDS['<|image_pad|>']` etc. are fixed.
"""
from __future__ import annotations

import dataclasses
from typing import Any

# The 22 Qwen2.5 special tokens, in id order (real ids are 151643 + index).
QWEN_SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
)
QWEN_BASE_VOCAB = 151643
QWEN_SPECIAL_IDS: dict[str, int] = {t: QWEN_BASE_VOCAB + i for i, t in enumerate(QWEN_SPECIAL_TOKENS)}

TINY_VOCAB_SIZE = 4096
TINY_BASE_VOCAB = TINY_VOCAB_SIZE - len(QWEN_SPECIAL_TOKENS)  # 4074 ordinary (SentencePiece) tokens
TINY_SPECIAL_IDS: dict[str, int] = {t: TINY_BASE_VOCAB + i for i, t in enumerate(QWEN_SPECIAL_TOKENS)}
TINY_IMAGE_PAD_ID = TINY_SPECIAL_IDS["<|image_pad|>"]
TINY_VIDEO_PAD_ID = TINY_SPECIAL_IDS["<|video_pad|>"]
TINY_VISION_START_ID = TINY_SPECIAL_IDS["<|vision_start|>"]
TINY_VISION_END_ID = TINY_SPECIAL_IDS["<|vision_end|>"]
TINY_IM_START_ID = TINY_SPECIAL_IDS["<|im_start|>"]
TINY_IM_END_ID = TINY_SPECIAL_IDS["<|im_end|>"]
TINY_ENDOFTEXT_ID = TINY_SPECIAL_IDS["<|endoftext|>"]

ATTENTION_IMPLS = ("auto", "xla", "splash", "cudnn")
# 'none': keep all activations; 'full': save only each layer's input (recompute the layer in the backward pass);
# the others are jax.checkpoint_policies of the same name (what is saved inside a layer).
REMAT_POLICIES = ("none", "full", "dots_saveable", "dots_with_no_batch_dims_saveable", "nothing_saveable",
                  "everything_saveable")
RUNTIME_FIELDS = ("attention_impl", "scan_layers", "remat_policy", "vision_per_row")  # not stored in config.json


@dataclasses.dataclass(frozen=True)
class VisionConfig:
  depth: int = 32
  hidden_size: int = 1280
  intermediate_size: int = 3420
  num_heads: int = 16
  in_channels: int = 3
  patch_size: int = 14
  temporal_patch_size: int = 2
  spatial_merge_size: int = 2
  window_size: int = 112           # in pixels; windows are window_size // patch // merge merged units wide
  out_hidden_size: int = 3584      # = text hidden size
  fullatt_block_indexes: tuple[int, ...] = (7, 15, 23, 31)
  tokens_per_second: int = 2
  hidden_act: str = "silu"
  rope_theta: float = 10000.0
  rms_norm_eps: float = 1e-6

  @property
  def head_dim(self) -> int:
    return self.hidden_size // self.num_heads

  @property
  def patch_dim(self) -> int:
    """Length of one flattened pixel patch row: C * T * P * P."""
    return self.in_channels * self.temporal_patch_size * self.patch_size * self.patch_size


@dataclasses.dataclass(frozen=True)
class TextConfig:
  vocab_size: int = 152064
  hidden_size: int = 3584
  intermediate_size: int = 18944
  num_hidden_layers: int = 28
  num_attention_heads: int = 28
  num_key_value_heads: int = 4
  rms_norm_eps: float = 1e-6
  rope_theta: float = 1000000.0
  mrope_section: tuple[int, int, int] = (16, 24, 24)  # sums to head_dim // 2
  max_position_embeddings: int = 128000
  hidden_act: str = "silu"
  bos_token_id: int | None = 151643
  eos_token_id: int | None = 151645
  pad_token_id: int | None = None

  @property
  def head_dim(self) -> int:
    return self.hidden_size // self.num_attention_heads


@dataclasses.dataclass(frozen=True)
class Qwen25VLConfig:
  text: TextConfig = TextConfig()
  vision: VisionConfig = VisionConfig()
  image_token_id: int = 151655
  video_token_id: int = 151656
  vision_start_token_id: int = 151652
  vision_end_token_id: int = 151653
  tie_word_embeddings: bool = False
  dtype: str = "float32"        # activation / compute dtype
  param_dtype: str = "float32"  # storage dtype of the weights
  # Runtime options (not part of the HF config.json; see RUNTIME_FIELDS):
  attention_impl: str = "auto"  # 'auto' | 'xla' | 'splash' | 'cudnn' (gui_jax/models/attention.py)
  scan_layers: bool = False     # decoder layers / vision blocks as one stacked module run by a scan
  remat_policy: str = "none"    # activation rematerialisation per layer/block: see REMAT_POLICIES
  vision_per_row: bool = False  # training batches carry images per row ([B, N, D] + grouped layout): sharded
                                # runs keep the vision tower split over the batch axes (vision.py)

  def __post_init__(self):
    if self.text.hidden_size % self.text.num_attention_heads:
      raise ValueError(f"text.hidden_size {self.text.hidden_size} not divisible by heads "
                       f"{self.text.num_attention_heads}")
    if self.text.num_attention_heads % self.text.num_key_value_heads:
      raise ValueError(f"text heads {self.text.num_attention_heads} not a multiple of kv heads "
                       f"{self.text.num_key_value_heads}")
    if sum(self.text.mrope_section) * 2 != self.text.head_dim:
      raise ValueError(f"mrope_section {self.text.mrope_section} must sum to head_dim/2 = "
                       f"{self.text.head_dim // 2}")
    if self.vision.hidden_size % self.vision.num_heads or self.vision.head_dim % 4:
      raise ValueError(f"vision head_dim {self.vision.hidden_size}/{self.vision.num_heads} must be a multiple of 4")
    if self.vision.out_hidden_size != self.text.hidden_size:
      raise ValueError(f"vision.out_hidden_size {self.vision.out_hidden_size} != text.hidden_size "
                       f"{self.text.hidden_size}")
    if self.attention_impl not in ATTENTION_IMPLS:
      raise ValueError(f"attention_impl {self.attention_impl!r} unknown; choose one of {ATTENTION_IMPLS}")
    if self.remat_policy not in REMAT_POLICIES:
      raise ValueError(f"remat_policy {self.remat_policy!r} unknown; choose one of {REMAT_POLICIES}")
    bad = [i for i in self.vision.fullatt_block_indexes if not 0 <= i < self.vision.depth]
    if bad:
      raise ValueError(f"fullatt_block_indexes {bad} outside vision depth {self.vision.depth}")

  def replace(self, **kw) -> "Qwen25VLConfig":
    return dataclasses.replace(self, **kw)

  # ------------------------------------------------------------------ HF I/O
  @classmethod
  def from_hf_dict(cls, d: dict[str, Any], dtype: str | None = None,
                   param_dtype: str | None = None, **runtime) -> "Qwen25VLConfig":
    """Builds the config from a HF config.json dict (transformers 5 or legacy layout).
    runtime: RUNTIME_FIELDS values (attention_impl, scan_layers, remat_policy); None entries are ignored."""
    runtime = {k: v for k, v in runtime.items() if v is not None}
    unknown = sorted(set(runtime) - set(RUNTIME_FIELDS))
    if unknown:
      raise TypeError(f"from_hf_dict: unknown runtime option(s) {unknown}; known: {RUNTIME_FIELDS}")
    text_d = dict(d.get("text_config") or {})
    # Legacy layout: text fields at the top level; nested values win when both exist.
    for f in dataclasses.fields(TextConfig):
      if f.name not in text_d and f.name in d:
        text_d[f.name] = d[f.name]
    rope = dict(text_d.get("rope_parameters") or text_d.get("rope_scaling") or d.get("rope_parameters")
                or d.get("rope_scaling") or {})
    theta = rope.get("rope_theta", text_d.get("rope_theta", d.get("rope_theta", TextConfig.rope_theta)))
    text_kw = {f.name: text_d[f.name] for f in dataclasses.fields(TextConfig) if f.name in text_d}
    text_kw.pop("rope_theta", None)
    text_kw.pop("mrope_section", None)
    if text_kw.get("num_key_value_heads") is None:
      text_kw["num_key_value_heads"] = text_kw.get("num_attention_heads", TextConfig.num_attention_heads)
    if isinstance(text_kw.get("eos_token_id"), list):
      text_kw["eos_token_id"] = text_kw["eos_token_id"][0]
    mrope = tuple(int(x) for x in rope.get("mrope_section", TextConfig.mrope_section))
    text = TextConfig(**text_kw, rope_theta=float(theta), mrope_section=mrope)

    vis_d = dict(d.get("vision_config") or {})
    alias = {"embed_dim": "hidden_size", "num_attention_heads": "num_heads", "num_hidden_layers": "depth",
             "in_chans": "in_channels"}
    for old, new in alias.items():
      if old in vis_d and new not in vis_d:
        vis_d[new] = vis_d[old]
    vis_kw = {f.name: vis_d[f.name] for f in dataclasses.fields(VisionConfig) if f.name in vis_d}
    vis_kw.pop("rope_theta", None)
    if "fullatt_block_indexes" in vis_kw:
      vis_kw["fullatt_block_indexes"] = tuple(int(i) for i in vis_kw["fullatt_block_indexes"])
    vis_theta = (vis_d.get("rope_parameters") or {}).get("rope_theta", vis_d.get("rope_theta", 10000.0))
    if "out_hidden_size" not in vis_kw:
      vis_kw["out_hidden_size"] = text.hidden_size
    vision = VisionConfig(**vis_kw, rope_theta=float(vis_theta))

    tie = bool(d.get("tie_word_embeddings", False) or text_d.get("tie_word_embeddings", False))
    hf_dtype = d.get("dtype") or d.get("torch_dtype") or text_d.get("dtype") or "float32"
    top = {k: d[k] for k in ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
           if k in d}
    return cls(text=text, vision=vision, tie_word_embeddings=tie, dtype=dtype or "float32",
               param_dtype=param_dtype or str(hf_dtype), **top, **runtime)

  def to_hf_dict(self) -> dict[str, Any]:
    """The transformers 5 `config.json` dict for this config."""
    t, v = self.text, self.vision
    text_d = {
        "model_type": "qwen2_5_vl_text", "vocab_size": t.vocab_size, "hidden_size": t.hidden_size,
        "intermediate_size": t.intermediate_size, "num_hidden_layers": t.num_hidden_layers,
        "num_attention_heads": t.num_attention_heads, "num_key_value_heads": t.num_key_value_heads,
        "hidden_act": t.hidden_act, "max_position_embeddings": t.max_position_embeddings,
        "rms_norm_eps": t.rms_norm_eps, "use_cache": True, "use_sliding_window": False, "sliding_window": None,
        "attention_dropout": 0.0, "bos_token_id": t.bos_token_id, "eos_token_id": t.eos_token_id,
        "pad_token_id": t.pad_token_id, "layer_types": ["full_attention"] * t.num_hidden_layers,
        "rope_parameters": {"rope_type": "default", "rope_theta": t.rope_theta,
                            "mrope_section": list(t.mrope_section)},
        "initializer_range": 0.02,
    }
    vis_d = {
        "model_type": "qwen2_5_vl_vision", "depth": v.depth, "hidden_size": v.hidden_size,
        "intermediate_size": v.intermediate_size, "num_heads": v.num_heads, "in_channels": v.in_channels,
        "patch_size": v.patch_size, "temporal_patch_size": v.temporal_patch_size,
        "spatial_merge_size": v.spatial_merge_size, "window_size": v.window_size,
        "out_hidden_size": v.out_hidden_size, "fullatt_block_indexes": list(v.fullatt_block_indexes),
        "tokens_per_second": v.tokens_per_second, "hidden_act": v.hidden_act,
        "rope_parameters": {"rope_type": "axial", "rope_theta": v.rope_theta}, "initializer_range": 0.02,
    }
    return {
        "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
        "dtype": self.param_dtype, "text_config": text_d, "vision_config": vis_d,
        "image_token_id": self.image_token_id, "video_token_id": self.video_token_id,
        "vision_start_token_id": self.vision_start_token_id, "vision_end_token_id": self.vision_end_token_id,
        "tie_word_embeddings": self.tie_word_embeddings,
    }


# ---------------------------------------------------------------------- presets
def tiny(vocab_size: int = TINY_VOCAB_SIZE, **kw) -> Qwen25VLConfig:
  """The embedded default: same architecture, tiny shapes (trains on 2 CPU cores).

  Vision: 4 blocks (0-2 windowed, 3 full attention), hidden 64, 4 heads; patch 14, merge 2, window 112 px.
  Text: 4 layers, hidden 128, 4 heads / 2 kv heads (GQA), head_dim 32, mrope_section (4, 6, 6).
  Special token ids are those of the tiny vocabulary (see TINY_SPECIAL_IDS) when vocab_size == TINY_VOCAB_SIZE.
  """
  base = vocab_size - len(QWEN_SPECIAL_TOKENS)
  ids = {t: base + i for i, t in enumerate(QWEN_SPECIAL_TOKENS)}
  text = TextConfig(vocab_size=vocab_size, hidden_size=128, intermediate_size=384, num_hidden_layers=4,
                    num_attention_heads=4, num_key_value_heads=2, rope_theta=10000.0, mrope_section=(4, 6, 6),
                    max_position_embeddings=8192, bos_token_id=ids["<|endoftext|>"],
                    eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"])
  vision = VisionConfig(depth=4, hidden_size=64, intermediate_size=128, num_heads=4, window_size=112,
                        out_hidden_size=128, fullatt_block_indexes=(3,))
  cfg = Qwen25VLConfig(text=text, vision=vision, image_token_id=ids["<|image_pad|>"],
                       video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
                       vision_end_token_id=ids["<|vision_end|>"], tie_word_embeddings=True)
  return cfg.replace(**kw) if kw else cfg


def _real(hidden, inter, layers, heads, kv, vocab, vis_inter, tie) -> Qwen25VLConfig:
  text = TextConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                    num_attention_heads=heads, num_key_value_heads=kv)
  vision = VisionConfig(intermediate_size=vis_inter, out_hidden_size=hidden)
  # Real sizes scan their layers (compile time and program size independent of depth).
  return Qwen25VLConfig(text=text, vision=vision, tie_word_embeddings=tie, dtype="bfloat16",
                        param_dtype="bfloat16", scan_layers=True)


_PRESETS = {
    "tiny": tiny,
    "3b": lambda: _real(2048, 11008, 36, 16, 2, 151936, 3420, True),
    "7b": lambda: _real(3584, 18944, 28, 28, 4, 152064, 3420, False),
    "32b": lambda: _real(5120, 27648, 64, 40, 8, 152064, 3456, False),
    "72b": lambda: _real(8192, 29568, 80, 64, 8, 152064, 3456, False),
}


def preset(name: str, **overrides) -> Qwen25VLConfig:
  """Named config: 'tiny', '3b', '7b', '32b', '72b'. Keyword overrides replace top-level fields."""
  key = name.lower().removeprefix("qwen2.5-vl-")
  if key not in _PRESETS:
    raise ValueError(f"unknown Qwen2.5-VL preset {name!r}; known: {sorted(_PRESETS)}")
  cfg = _PRESETS[key]()
  return cfg.replace(**overrides) if overrides else cfg
