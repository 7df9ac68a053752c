"""Pillow renderer: widget tree -> phone-like screenshot (uint8 HxWx3) at any resolution.

Drawing happens directly at the target resolution (logical coordinates scaled), with Pillow's
bundled scalable font (no system font dependency, so screenshots are bitwise identical across
machines with the same Pillow). Rendered text masks are cached because FreeType dominates cost.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from gui_jax.envs.sim.widgets import KEYBOARD_H, STATUS_H, H, Node, Screen, W

LIGHT = {
    "bg": (250, 250, 252),
    "fg": (28, 28, 32),
    "sub": (110, 112, 120),
    "line": (225, 226, 232),
    "card": (255, 255, 255),
    "field": (242, 243, 247),
    "accent": (26, 115, 232),
}
DARK = {
    "bg": (24, 25, 28),
    "fg": (236, 236, 240),
    "sub": (150, 152, 160),
    "line": (55, 57, 62),
    "card": (44, 45, 50),
    "field": (48, 50, 55),
    "accent": (110, 165, 255),
}
SIZES = {
    "title": 56,
    "row_title": 46,
    "row_sub": 36,
    "row_right": 44,
    "label": 34,
    "edit": 44,
    "button": 44,
    "button2": 44,
    "text_body": 42,
    "text_header": 38,
    "text_big": 110,
    "text_small": 36,
    "value": 46,
    "chip": 38,
    "bar_button": 40,
    "app_icon": 34,
    "dialog_title": 50,
    "dialog_button": 42,
    "status": 34,
}

SWITCH_ON = (26, 115, 232)  # one "on" colour for every switch: clear on/off contrast in any app
_fonts: dict = {}
_masks: "OrderedDict[tuple, Image.Image]" = OrderedDict()


def font(px: int):
    f = _fonts.get(px)
    if f is None:
        f = _fonts[px] = ImageFont.load_default(size=max(6, px))
    return f


def _mask(text: str, px: int) -> Image.Image:
    key = (text, px)
    m = _masks.get(key)
    if m is None:
        f = font(px)
        x1, y1, x2, y2 = f.getbbox(text)
        m = Image.new("L", (max(1, x2), max(1, int(px * 1.25))))
        ImageDraw.Draw(m).text((0, 0), text, font=f, fill=255)
        _masks[key] = m
        if len(_masks) > 8192:
            _masks.popitem(last=False)
    else:
        _masks.move_to_end(key)
    return m


class Painter:
    def __init__(self, size: tuple[int, int], dark: bool, accent):
        self.w, self.h = size
        self.sx, self.sy = self.w / W, self.h / H
        self.p = dict(DARK if dark else LIGHT)
        self.accent = tuple(accent)
        self.img = Image.new("RGB", size, self.p["bg"])
        self.d = ImageDraw.Draw(self.img)

    def box(self, b):
        x1, y1, x2, y2 = b
        return (x1 * self.sx, y1 * self.sy, max(x1 * self.sx, x2 * self.sx - 1), max(y1 * self.sy, y2 * self.sy - 1))

    def rect(self, b, fill=None, outline=None, r=0, width=1):
        bx = self.box(b)
        if r:
            self.d.rounded_rectangle(bx, radius=max(1, r * self.sx), fill=fill, outline=outline, width=width)
        else:
            self.d.rectangle(bx, fill=fill, outline=outline, width=width)

    def text(self, b, text: str, size: int, color, align: str = "left", valign: str = "center"):
        if not text:
            return
        px = max(6, int(round(size * self.sy)))
        x1, y1, x2, y2 = self.box(b)
        avail = x2 - x1
        max_chars = max(1, int(avail / (px * 0.52)))
        if len(text) > max_chars:
            text = text[: max(1, max_chars - 3)] + "..."
        m = _mask(text, px)
        if m.size[0] > avail and len(text) > 2:
            keep = max(1, int(len(text) * avail / m.size[0]) - 1)
            m = _mask(text[: max(1, keep - 2)] + "...", px)
        tw, th = m.size
        x = x1 if align == "left" else (x1 + x2 - tw) / 2 if align == "center" else x2 - tw
        y = y1 if valign == "top" else (y1 + y2 - th) / 2
        self.img.paste(color, (int(x), int(y)), m)


def _letter_color(letter: str):
    v = sum(ord(c) for c in letter) * 37
    return (60 + v % 150, 60 + (v // 3) % 150, 60 + (v // 7) % 150)


def render_screen(scr: Screen, size: tuple[int, int], accent, status: dict) -> np.ndarray:
    """Render `scr` at size=(width, height). status: {'clock','wifi','bluetooth','airplane'}."""
    pt = Painter(size, scr.dark, accent)
    kids = scr.root.children
    body_like = [n for n in kids if n.kind in ("body", "fab")]
    top_like = [n for n in kids if n.kind in ("appbar",)]
    dialog = [n for n in kids if n.kind == "dialog"]
    if dialog:  # the page under a dialog is not in the tree; draw a plain dimmed backdrop
        pt.rect((0, 0, W, H), fill=(120, 120, 124) if not scr.dark else (12, 12, 14))
    for n in body_like + top_like:
        _draw(pt, n)
    _status(pt, status)
    for n in dialog:
        _draw(pt, n)
    if scr.keyboard:
        _keyboard(pt)
    if scr.toast:
        pt.rect(
            (
                190,
                H - (KEYBOARD_H if scr.keyboard else 0) - 330,
                W - 190,
                H - (KEYBOARD_H if scr.keyboard else 0) - 220,
            ),
            fill=(50, 50, 54),
            r=55,
        )
        pt.text(
            (
                190,
                H - (KEYBOARD_H if scr.keyboard else 0) - 330,
                W - 190,
                H - (KEYBOARD_H if scr.keyboard else 0) - 220,
            ),
            scr.toast,
            38,
            (255, 255, 255),
            align="center",
        )
    # gesture pill
    pt.rect((400, H - 40, 680, H - 28), fill=pt.p["sub"], r=6)
    return np.asarray(pt.img, dtype=np.uint8).copy()


def _status(pt: Painter, st: dict) -> None:
    pt.rect((0, 0, W, STATUS_H), fill=pt.p["bg"])
    pt.text((40, 0, 300, STATUS_H), st.get("clock", ""), 36, pt.p["fg"])
    x = W - 60
    pt.rect((x - 50, 26, x + 10, 56), outline=pt.p["fg"], width=2, r=5)
    pt.rect((x - 46, 30, x - 10, 52), fill=pt.p["fg"])
    x -= 100
    if st.get("wifi"):
        cx, cy = x, 58
        for r in (36, 24, 12):
            pt.d.arc(pt.box((cx - r, cy - r, cx + r, cy + r)), 225, 315, fill=pt.p["fg"], width=max(1, int(5 * pt.sx)))
        x -= 80
    if st.get("bluetooth"):
        pt.text((x - 30, 0, x + 30, STATUS_H), "B", 38, pt.p["fg"], align="center")
        x -= 70
    if st.get("airplane"):
        pt.text((x - 30, 0, x + 30, STATUS_H), "A", 38, pt.p["fg"], align="center")


def _keyboard(pt: Painter) -> None:
    top = H - KEYBOARD_H
    pt.rect((0, top, W, H), fill=(210, 213, 220))
    rows = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]
    kw, kh = 100, 150
    for r, keys in enumerate(rows):
        x0 = (W - len(keys) * (kw + 6)) // 2
        y = top + 30 + r * (kh + 20)
        for i, k in enumerate(keys):
            b = (x0 + i * (kw + 6), y, x0 + i * (kw + 6) + kw, y + kh)
            pt.rect(b, fill=(255, 255, 255), r=12)
            pt.text(b, k, 48, (30, 30, 30), align="center")
    y = top + 30 + 3 * (kh + 20)
    pt.rect((230, y, 850, y + kh - 20), fill=(255, 255, 255), r=12)
    pt.rect((870, y, 1040, y + kh - 20), fill=pt.accent, r=12)
    pt.text((870, y, 1040, y + kh - 20), "go", 44, (255, 255, 255), align="center")


def _draw(pt: Painter, n: Node) -> None:
    k, b, p = n.kind, n.draw, pt.p
    x1, y1, x2, y2 = b
    if k == "appbar":
        pt.rect(b, fill=pt.accent)
    elif k == "title":
        pt.text(b, n.text, SIZES["title"], (255, 255, 255))
    elif k == "icon_back":
        cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
        pts = [(cx + 18, cy - 30), (cx - 18, cy), (cx + 18, cy + 30)]
        pt.d.line([(x * pt.sx, y * pt.sy) for x, y in pts], fill=(255, 255, 255), width=max(1, int(8 * pt.sx)))
    elif k == "bar_button":
        pt.rect(b, outline=(255, 255, 255), r=50, width=max(1, int(3 * pt.sx)))
        pt.text(b, n.text, SIZES[k], (255, 255, 255), align="center")
    elif k == "row":
        if n.clickable:
            pt.rect((x1, y2 - 2, x2, y2), fill=p["line"])
    elif k in ("row_title", "row_sub", "row_right", "label", "value"):
        color = p["sub"] if k in ("row_sub", "label") else p["fg"]
        pt.text(b, n.text, SIZES[k], color, align="right" if k == "row_right" else "left")
    elif k == "avatar":
        pt.d.ellipse(pt.box(b), fill=_letter_color(n.style.get("letter", "?")))
        pt.text(b, n.style.get("letter", "?"), 52, (255, 255, 255), align="center")
    elif k == "checkbox":
        bb = ((x1 + x2) / 2 - 35, (y1 + y2) / 2 - 35, (x1 + x2) / 2 + 35, (y1 + y2) / 2 + 35)
        if n.checked:
            pt.rect(bb, fill=pt.accent, r=10)
            pt.d.line(
                [
                    pt.box((bb[0] + 14, bb[1] + 36, 0, 0))[:2],
                    pt.box((bb[0] + 30, bb[1] + 52, 0, 0))[:2],
                    pt.box((bb[0] + 58, bb[1] + 18, 0, 0))[:2],
                ],
                fill=(255, 255, 255),
                width=max(1, int(7 * pt.sx)),
            )
        else:
            pt.rect(bb, outline=p["sub"], r=10, width=max(1, int(5 * pt.sx)))
    elif k == "switch":
        on = n.checked
        pt.rect((x1 + 20, y1 + 15, x2 - 20, y2 - 15), fill=SWITCH_ON if on else p["line"], r=40)
        kx = x2 - 75 if on else x1 + 75
        pt.d.ellipse(
            pt.box((kx - 38, (y1 + y2) / 2 - 38, kx + 38, (y1 + y2) / 2 + 38)), fill=(255, 255, 255), outline=p["sub"]
        )
    elif k == "edit":
        pt.rect(
            b,
            fill=p["field"],
            r=18,
            outline=pt.accent if n.focused else p["line"],
            width=max(1, int((5 if n.focused else 2) * pt.sx)),
        )
        inner = (x1 + 30, y1, x2 - 140, y2)
        if n.text:
            pt.text(inner, n.text + ("|" if n.focused else ""), SIZES["edit"], p["fg"])
        else:
            pt.text(inner, ("|" if n.focused else "") + n.style.get("hint", ""), SIZES["edit"], p["sub"])
    elif k == "icon_clear":
        cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
        w = max(1, int(5 * pt.sx))
        pt.d.line([pt.box((cx - 18, cy - 18, 0, 0))[:2], pt.box((cx + 18, cy + 18, 0, 0))[:2]], fill=p["sub"], width=w)
        pt.d.line([pt.box((cx - 18, cy + 18, 0, 0))[:2], pt.box((cx + 18, cy - 18, 0, 0))[:2]], fill=p["sub"], width=w)
    elif k in ("button", "dialog_button", "chip"):
        filled = k == "button" or (k == "chip" and n.selected)
        if k == "dialog_button":
            pt.text(b, n.text.upper(), SIZES[k], pt.accent, align="center")
        else:
            pt.rect(
                b,
                fill=pt.accent if filled else p["card"],
                outline=None if filled else p["sub"],
                r=60,
                width=max(1, int(3 * pt.sx)),
            )
            pt.text(b, n.text, SIZES[k], (255, 255, 255) if filled else p["fg"], align="center")
    elif k == "button2":
        pt.rect(b, fill=p["card"], outline=pt.accent, r=60, width=max(1, int(4 * pt.sx)))
        pt.text(b, n.text, SIZES[k], pt.accent, align="center")
    elif k.startswith("text_"):
        size = {"text_big": 110, "text_header": 38, "text_small": 36, "text_body": 42}[k]
        color = pt.accent if k == "text_header" else p["fg"]
        pt.text(b, n.text, size, color, align="center" if k == "text_big" else "left")
    elif k == "slider":
        cy = (y1 + y2) / 2
        try:
            v = int(n.text) / 100
        except ValueError:
            v = 0.0
        pt.rect((x1, cy - 6, x2, cy + 6), fill=p["line"], r=6)
        kx = x1 + v * (x2 - x1)
        pt.rect((x1, cy - 6, kx, cy + 6), fill=pt.accent, r=6)
        pt.d.ellipse(pt.box((kx - 30, cy - 30, kx + 30, cy + 30)), fill=pt.accent)
    elif k == "app_icon":
        cx = (x1 + x2) / 2
        pt.rect((cx - 85, y1 + 20, cx + 85, y1 + 190), fill=n.style.get("color", pt.accent), r=45)
        pt.text((cx - 85, y1 + 20, cx + 85, y1 + 190), n.style.get("letter", "?"), 90, (255, 255, 255), align="center")
        pt.text((x1, y1 + 200, x2, y2), n.text, SIZES[k], p["fg"], align="center")
    elif k == "fab":
        pt.d.ellipse(pt.box(b), fill=pt.accent)
        cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
        pt.rect((cx - 40, cy - 6, cx + 40, cy + 6), fill=(255, 255, 255))
        pt.rect((cx - 6, cy - 40, cx + 6, cy + 40), fill=(255, 255, 255))
    elif k == "dialog":
        pt.rect(b, fill=p["card"], r=40)
    elif k == "dialog_title":
        pt.text(b, n.text, SIZES[k], p["fg"])
    for c in n.children:
        _draw(pt, c)
