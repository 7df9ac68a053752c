"""Set-of-Mark screenshots (UI-Genie; `prompt.set_of_mark`): each listed UI element's box and index drawn
on the screenshot, so a model that reads pixels can name elements by index as a UI-text prompt does.

Per element, in list order (later marks cover earlier ones): a `MARK_WIDTH`-pixel outline along the inside
of its bounds and, in its top-left corner, a filled tag in the same colour with the index in white. Bounds
are screen pixels (`Observation.screen_size`), scaled to the screenshot's resolution; everything drawn is
clipped to the element's box, so a marked screenshot differs from the plain one only inside element boxes.
Colours cycle through `PALETTE` by list position; the font is Pillow's built-in one. Deterministic.
"""
from __future__ import annotations

import functools
from typing import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from gui_jax.core.types import UIElement

PALETTE = ((230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48), (145, 30, 180), (0, 128, 128),
           (128, 0, 0), (0, 0, 128))
MARK_WIDTH = 2  # outline width in screenshot pixels


@functools.lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def box_in_image(bounds: Sequence[int], screen_size: tuple[int, int], image_size: tuple[int, int]):
    """(x1, y1, x2, y2) of screen-pixel bounds in an image of (width, height) `image_size`, clipped to it
    (x2, y2 exclusive); None when nothing of the box is inside the image."""
    sx, sy = image_size[0] / screen_size[0], image_size[1] / screen_size[1]
    x1, y1 = max(int(round(bounds[0] * sx)), 0), max(int(round(bounds[1] * sy)), 0)
    x2, y2 = min(int(round(bounds[2] * sx)), image_size[0]), min(int(round(bounds[3] * sy)), image_size[1])
    return (x1, y1, x2, y2) if x2 > x1 and y2 > y1 else None


def mark_color(position: int) -> tuple[int, int, int]:
    """The colour of the mark of the `position`-th listed element."""
    return PALETTE[position % len(PALETTE)]


def mark_screenshot(screenshot: np.ndarray, elements: Sequence[UIElement],
                    screen_size: tuple[int, int]) -> np.ndarray:
    """A copy of the (H, W, 3) uint8 screenshot with each element's box and index drawn (module docstring)."""
    img = Image.fromarray(np.asarray(screenshot, dtype=np.uint8)).convert("RGB")
    font = _font(max(10, min(img.size) // 40))
    for pos, e in enumerate(elements):
        box = box_in_image(e.bounds, screen_size, img.size)
        if box is None:
            continue
        x1, y1, x2, y2 = box
        color = mark_color(pos)
        tile = img.crop(box)  # drawn on the element's own tile: nothing can land outside its box
        draw = ImageDraw.Draw(tile)
        draw.rectangle((0, 0, x2 - x1 - 1, y2 - y1 - 1), outline=color, width=MARK_WIDTH)
        label = str(e.index)
        left, top, right, bottom = draw.textbbox((0, 0), label, font=font)
        draw.rectangle((0, 0, right - left + 2, bottom - top + 2), fill=color)
        draw.text((1 - left, 1 - top), label, fill=(255, 255, 255), font=font)
        img.paste(tile, box[:2])
    return np.asarray(img)
