"""Qwen2.5-VL image preprocessing, bit-for-bit equal to transformers' `Qwen2VLImageProcessorPil`.

An image becomes `grid_t * grid_h * grid_w` patch rows of length C*T*P*P (3*2*14*14 = 1176):
smart-resize to multiples of patch*merge (28) within [min_pixels, max_pixels] with PIL bicubic,
rescale by 1/255 (in float64, then float32), normalise with the OpenAI CLIP mean/std (float32),
repeat the single frame over the temporal patch (2), and order patches so each 2x2 merge group
is contiguous (row-major over merge groups, then row-major inside a group). The language model
sees grid_t*grid_h*grid_w / merge**2 image tokens per image.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from typing import Sequence, Union

import numpy as np
from PIL import Image

OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
DEFAULT_MIN_PIXELS = 56 * 56
DEFAULT_MAX_PIXELS = 28 * 28 * 1280
IMAGE_PAD = "<|image_pad|>"
PREPROCESSOR_CONFIG = "preprocessor_config.json"  # a Hugging Face checkpoint's image processor settings

ImageLike = Union[Image.Image, np.ndarray]


def smart_resize(height: int, width: int, factor: int = 28, min_pixels: int = DEFAULT_MIN_PIXELS,
                 max_pixels: int = DEFAULT_MAX_PIXELS) -> tuple[int, int]:
    """Target (height, width): multiples of `factor`, area within [min_pixels, max_pixels],
    aspect ratio kept as closely as possible. Aspect ratios above 200 are rejected."""
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got height={height} width={width}")
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio must be at most 200, got {height}x{width}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def to_rgb_pil(image: ImageLike, where: str = "image") -> Image.Image:
    """PIL RGB image from a PIL image of any mode (alpha composited on white, as HF does) or a
    uint8 array HxW / HxWx1 / HxWx3 / HxWx4."""
    if isinstance(image, np.ndarray):
        if image.dtype != np.uint8:
            raise TypeError(f"{where}: arrays must be uint8 HxWx3, got dtype {image.dtype}")
        if image.ndim == 3 and image.shape[-1] == 1:
            image = image[..., 0]
        if image.ndim == 2:
            image = Image.fromarray(image, mode="L")
        elif image.ndim == 3 and image.shape[-1] in (3, 4):
            image = Image.fromarray(np.ascontiguousarray(image), mode="RGB" if image.shape[-1] == 3 else "RGBA")
        else:
            raise ValueError(f"{where}: expected an HxW, HxWx3 or HxWx4 array, got shape {image.shape}")
    if not isinstance(image, Image.Image):
        raise TypeError(f"{where}: expected a PIL image or uint8 array, got {type(image).__name__}")
    if "A" in image.getbands() or image.info.get("transparency") is not None:
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return image.convert("RGB")


def patchify(image_chw: np.ndarray, patch_size: int, merge_size: int, temporal_patch_size: int) -> np.ndarray:
    """[C, H, W] float32 -> [grid_h*grid_w, C*T*P*P]; 2x2 merge groups contiguous, frame repeated T times."""
    c, h, w = image_chw.shape
    gh, gw = h // patch_size, w // patch_size
    x = image_chw.reshape(c, gh // merge_size, merge_size, patch_size, gw // merge_size, merge_size, patch_size)
    x = x.transpose(1, 4, 2, 5, 0, 3, 6)  # [gh/m, gw/m, m, m, C, P, P]
    x = np.broadcast_to(x[:, :, :, :, :, None], (*x.shape[:5], temporal_patch_size, *x.shape[5:]))
    return x.reshape(gh * gw, c * temporal_patch_size * patch_size * patch_size)


@dataclass(frozen=True)
class ImageProcessor:
    """Qwen2-VL / Qwen2.5-VL image processor (single images; videos are not supported)."""

    min_pixels: int = DEFAULT_MIN_PIXELS
    max_pixels: int = DEFAULT_MAX_PIXELS
    patch_size: int = 14
    temporal_patch_size: int = 2
    merge_size: int = 2
    image_mean: tuple[float, float, float] = OPENAI_CLIP_MEAN
    image_std: tuple[float, float, float] = OPENAI_CLIP_STD

    @property
    def factor(self) -> int:
        return self.patch_size * self.merge_size

    @property
    def patch_dim(self) -> int:
        return 3 * self.temporal_patch_size * self.patch_size * self.patch_size

    @classmethod
    def from_hf_dict(cls, d: dict) -> "ImageProcessor":
        """From a preprocessor_config.json dict (min/max_pixels or size.shortest/longest_edge)."""
        size = d.get("size") or {}
        return cls(
            min_pixels=int(d.get("min_pixels", size.get("shortest_edge", DEFAULT_MIN_PIXELS))),
            max_pixels=int(d.get("max_pixels", size.get("longest_edge", DEFAULT_MAX_PIXELS))),
            patch_size=int(d.get("patch_size", 14)),
            temporal_patch_size=int(d.get("temporal_patch_size", 2)),
            merge_size=int(d.get("merge_size", 2)),
            image_mean=tuple(d.get("image_mean", OPENAI_CLIP_MEAN)),
            image_std=tuple(d.get("image_std", OPENAI_CLIP_STD)),
        )

    @classmethod
    def from_pretrained(cls, path: str, **overrides) -> "ImageProcessor":
        """From a checkpoint directory's preprocessor_config.json (class defaults when it has none);
        `overrides` (e.g. min_pixels=..., max_pixels=...) replace what the file says."""
        file = os.path.join(path, PREPROCESSOR_CONFIG)
        d: dict = {}
        if os.path.isfile(file):
            try:
                with open(file, encoding="utf-8") as f:
                    d = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{file}: not valid JSON ({e})") from None
            if not isinstance(d, dict):
                raise ValueError(f"{file}: expected a JSON object, got {type(d).__name__}")
        try:
            proc = cls.from_hf_dict(d)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{file}: bad image processor setting ({e})") from None
        proc = dataclasses.replace(proc, **overrides)
        if not 0 < proc.min_pixels <= proc.max_pixels:
            raise ValueError(f"{file}: need 0 < min_pixels <= max_pixels, got {proc.min_pixels}, {proc.max_pixels}")
        if min(proc.patch_size, proc.merge_size, proc.temporal_patch_size) < 1:
            raise ValueError(f"{file}: patch_size, merge_size and temporal_patch_size must be >= 1")
        return proc

    def resized_size(self, height: int, width: int) -> tuple[int, int]:
        return smart_resize(height, width, self.factor, self.min_pixels, self.max_pixels)

    def grid_thw(self, height: int, width: int) -> tuple[int, int, int]:
        """(t, h, w) patch grid for an original image of this size (no pixels needed)."""
        rh, rw = self.resized_size(height, width)
        return 1, rh // self.patch_size, rw // self.patch_size

    def num_image_tokens(self, height: int, width: int) -> int:
        t, h, w = self.grid_thw(height, width)
        return t * h * w // (self.merge_size ** 2)

    def process_one(self, image: ImageLike, where: str = "image") -> tuple[np.ndarray, tuple[int, int, int]]:
        """One image -> (pixel_values [t*h*w, patch_dim] float32, (t, h, w))."""
        pil = to_rgb_pil(image, where)
        rh, rw = self.resized_size(pil.height, pil.width)
        resized = np.asarray(pil.resize((rw, rh), resample=Image.BICUBIC))  # [rh, rw, 3] uint8
        x = (resized.astype(np.float64) * (1 / 255)).astype(np.float32)
        x = (x - np.asarray(self.image_mean, np.float32)) / np.asarray(self.image_std, np.float32)
        x = np.ascontiguousarray(x.transpose(2, 0, 1))  # [3, rh, rw]
        patches = patchify(x, self.patch_size, self.merge_size, self.temporal_patch_size)
        return patches, (1, rh // self.patch_size, rw // self.patch_size)

    def __call__(self, images: Union[ImageLike, Sequence[ImageLike]]) -> dict[str, np.ndarray]:
        """Images -> {pixel_values [sum_i t*h*w, patch_dim] float32, image_grid_thw [n, 3] int64}."""
        if isinstance(images, (Image.Image, np.ndarray)):
            images = [images]
        if len(images) == 0:
            return {"pixel_values": np.zeros((0, self.patch_dim), np.float32),
                    "image_grid_thw": np.zeros((0, 3), np.int64)}
        out = [self.process_one(im, where=f"image {i}") for i, im in enumerate(images)]
        return {
            "pixel_values": np.concatenate([p for p, _ in out], axis=0),
            "image_grid_thw": np.asarray([g for _, g in out], dtype=np.int64),
        }


def tokens_per_image(image_grid_thw: np.ndarray, merge_size: int = 2) -> list[int]:
    """Image-token count per image: t*h*w / merge_size**2."""
    grid = np.asarray(image_grid_thw).reshape(-1, 3)
    return [int(t * h * w) // (merge_size ** 2) for t, h, w in grid]


def expand_image_pads(text: str, counts: Sequence[int], pad: str = IMAGE_PAD) -> str:
    """Replace the k-th single `pad` placeholder by counts[k] copies of it."""
    pieces = text.split(pad)
    if len(pieces) - 1 != len(counts):
        raise ValueError(f"text has {len(pieces) - 1} {pad} placeholders but {len(counts)} images were given")
    out = [pieces[0]]
    for count, rest in zip(counts, pieces[1:]):
        out.append(pad * int(count))
        out.append(rest)
    return "".join(out)
