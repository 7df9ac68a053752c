"""Image processor: bitwise parity with transformers' Qwen2VLImageProcessorPil, patch ordering, token counts."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from PIL import Image

from gui_jax.models.processor import (
    ImageProcessor, expand_image_pads, patchify, smart_resize, to_rgb_pil, tokens_per_image,
)

warnings.filterwarnings("ignore", category=FutureWarning)
from transformers.models.qwen2_vl import image_processing_pil_qwen2_vl as hf_mod  # noqa: E402


def _rand_image(h, w, seed=0, channels=3):
    rng = np.random.default_rng(seed + 1000 * h + w)
    shape = (h, w) if channels == 1 else (h, w, channels)
    return rng.integers(0, 256, shape, dtype=np.uint8)


def _hf(images, **kw):
    out = hf_mod.Qwen2VLImageProcessorPil(**kw)(images=images, return_tensors="np")
    return np.asarray(out["pixel_values"]), np.asarray(out["image_grid_thw"])


# (height, width): square, non-square, tiny (below min_pixels), extreme aspect, phone screens, huge (above max_pixels)
SIZES = [(224, 224), (100, 37), (28, 28), (5, 7), (1, 150), (57, 1000), (2400, 1080), (1280, 720), (3000, 4000)]


@pytest.mark.parametrize("hw", SIZES)
def test_matches_hf_pil_processor_bitwise(hw):
    image = Image.fromarray(_rand_image(*hw))
    ref_pv, ref_grid = _hf([image])
    out = ImageProcessor()([image])
    assert out["pixel_values"].dtype == np.float32 and out["image_grid_thw"].dtype == np.int64
    assert out["pixel_values"].shape == ref_pv.shape
    np.testing.assert_array_equal(out["image_grid_thw"], ref_grid)
    np.testing.assert_array_equal(out["pixel_values"], ref_pv)  # bitwise


def test_min_max_pixels_are_hit_and_match_hf():
    proc = ImageProcessor()
    t, h, w = proc.grid_thw(3000, 4000)  # huge -> clamped to max_pixels
    assert h * w * 14 * 14 <= proc.max_pixels and (h * 14) % 28 == 0 and (w * 14) % 28 == 0
    t, h, w = proc.grid_thw(5, 7)  # tiny -> raised to min_pixels
    assert h * w * 14 * 14 >= proc.min_pixels
    # custom bounds, several images in one call (concatenated in order)
    kw = dict(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 64)
    images = [Image.fromarray(_rand_image(*hw, seed=3)) for hw in [(900, 400), (10, 10), (333, 333)]]
    ref_pv, ref_grid = _hf(images, **kw)
    out = ImageProcessor(**kw)(images)
    np.testing.assert_array_equal(out["image_grid_thw"], ref_grid)
    np.testing.assert_array_equal(out["pixel_values"], ref_pv)
    assert all(4 <= n <= 64 for n in tokens_per_image(out["image_grid_thw"]))


@pytest.mark.parametrize("kind", ["rgba", "gray_pil", "palette", "array_rgb", "array_gray"])
def test_image_kinds_match_hf(kind):
    arr = _rand_image(90, 61, seed=7, channels=4)
    if kind == "rgba":
        image = Image.fromarray(arr, mode="RGBA")  # alpha composited on white, like HF
    elif kind == "gray_pil":
        image = Image.fromarray(arr[..., 0], mode="L")
    elif kind == "palette":
        image = Image.fromarray(arr[..., :3]).convert("P")
    elif kind == "array_rgb":
        image = np.ascontiguousarray(arr[..., :3])
    else:
        image = Image.fromarray(arr[..., 1], mode="L")
    ref_image = image
    if kind == "array_gray":  # our array path: HxW uint8; HF gets the same pixels as a PIL L image
        image = arr[..., 1]
    ref_pv, ref_grid = _hf([ref_image])
    out = ImageProcessor()([image])
    np.testing.assert_array_equal(out["image_grid_thw"], ref_grid)
    np.testing.assert_array_equal(out["pixel_values"], ref_pv)


def test_patch_order_and_temporal_repeat_by_hand():
    """Row k of pixel_values is the patch at (merge row, merge col, in-group row, in-group col), C,T,P,P flattened."""
    rng = np.random.default_rng(0)
    img = rng.standard_normal((3, 4 * 14, 6 * 14)).astype(np.float32)  # grid 4 x 6 patches
    pv = patchify(img, patch_size=14, merge_size=2, temporal_patch_size=2)
    assert pv.shape == (24, 3 * 2 * 14 * 14)
    k = 0
    for by in range(2):
        for bx in range(3):
            for iy in range(2):
                for ix in range(2):
                    gy, gx = 2 * by + iy, 2 * bx + ix
                    patch = img[:, gy * 14:(gy + 1) * 14, gx * 14:(gx + 1) * 14]  # [C, P, P]
                    expect = np.stack([patch, patch], axis=1).reshape(-1)  # [C, T, P, P]
                    np.testing.assert_array_equal(pv[k], expect)
                    k += 1


def test_normalisation_values():
    white = np.full((28, 28, 3), 255, np.uint8)
    pv = ImageProcessor()(white)["pixel_values"]
    mean, std = np.array([0.48145466, 0.4578275, 0.40821073]), np.array([0.26862954, 0.26130258, 0.27577711])
    per_channel = pv.reshape(-1, 3, 2 * 14 * 14)
    np.testing.assert_allclose(per_channel[0, :, 0], (1 - mean) / std, rtol=1e-6)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5000), st.integers(1, 5000), st.integers(1, 40), st.integers(1, 400))
def test_smart_resize_matches_hf_and_invariants(h, w, min_units, max_units):
    min_px, max_px = 784 * min_units, 784 * max(min_units, max_units)
    if max(h, w) / min(h, w) > 200:
        with pytest.raises(ValueError, match="aspect ratio"):
            smart_resize(h, w, 28, min_px, max_px)
        return
    got = smart_resize(h, w, 28, min_px, max_px)
    assert got == hf_mod.smart_resize(h, w, 28, min_px, max_px)
    assert got[0] % 28 == 0 and got[1] % 28 == 0 and got[0] >= 28 and got[1] >= 28


def test_token_counts_and_pad_expansion():
    proc = ImageProcessor()
    out = proc([_rand_image(100, 60), _rand_image(56, 300)])
    counts = tokens_per_image(out["image_grid_thw"])
    assert counts == [int(np.prod(g)) // 4 for g in out["image_grid_thw"]]
    assert counts == [proc.num_image_tokens(100, 60), proc.num_image_tokens(56, 300)]
    assert sum(int(np.prod(g)) for g in out["image_grid_thw"]) == out["pixel_values"].shape[0]
    text = "a<|image_pad|>b<|image_pad|>c"
    pad = "<|image_pad|>"
    assert expand_image_pads(text, counts) == "a" + pad * counts[0] + "b" + pad * counts[1] + "c"
    with pytest.raises(ValueError, match="2 <\\|image_pad\\|> placeholders but 1 images"):
        expand_image_pads(text, counts[:1])


def test_bad_inputs_name_the_problem():
    with pytest.raises(TypeError, match="uint8"):
        ImageProcessor()(np.zeros((28, 28, 3), np.float32))
    with pytest.raises(ValueError, match="image 1: expected an HxW"):
        ImageProcessor()([np.zeros((28, 28, 3), np.uint8), np.zeros((28, 28, 5), np.uint8)])
    assert to_rgb_pil(np.zeros((4, 5, 1), np.uint8)).size == (5, 4)
    empty = ImageProcessor()([])
    assert empty["pixel_values"].shape == (0, 1176) and empty["image_grid_thw"].shape == (0, 3)


def test_from_hf_dict():
    p = ImageProcessor.from_hf_dict({"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14})
    assert (p.min_pixels, p.max_pixels) == (3136, 12845056)
    p = ImageProcessor.from_hf_dict({"size": {"shortest_edge": 100, "longest_edge": 20000}})
    assert (p.min_pixels, p.max_pixels) == (100, 20000)
