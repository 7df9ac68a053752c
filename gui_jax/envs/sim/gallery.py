"""Gallery: render the launcher and the main screen of every app into one PNG.

python -m gui_jax.envs.sim.gallery --out gallery.png [--seed 0] [--width 270]
"""

from __future__ import annotations

import argparse
import random

from PIL import Image

from gui_jax.envs.sim.apps import APP_CLASSES
from gui_jax.envs.sim.device import Device
from gui_jax.envs.sim.render import render_screen


def app_screens(seed: int = 0, width: int = 270):
    """[(name, HxWx3 uint8)] for the launcher and each app's main page."""
    dev = Device(APP_CLASSES)
    for app in dev.apps.values():
        app.populate(random.Random(f"world:{seed}:{app.key}"))
    size = (width, int(round(width * 2400 / 1080)))
    out = []
    for key in ("launcher",) + tuple(dev.apps):
        if key == "launcher":
            dev.home()
        else:
            dev.open_app(key)
        dev.invalidate()
        st = dev.settings
        status = {"clock": dev.clock, "wifi": st.wifi, "bluetooth": st.bluetooth, "airplane": st.airplane}
        accent = dev.apps[key].color if key in dev.apps else (26, 115, 232)
        out.append((key, render_screen(dev.screen(), size, accent, status)))
    return out


def gallery(seed: int = 0, width: int = 270, cols: int = 7) -> Image.Image:
    shots = app_screens(seed, width)
    h, w = shots[0][1].shape[:2]
    rows = (len(shots) + cols - 1) // cols
    sheet = Image.new("RGB", (cols * (w + 10) + 10, rows * (h + 10) + 10), (40, 40, 40))
    for i, (_, img) in enumerate(shots):
        sheet.paste(Image.fromarray(img), (10 + (i % cols) * (w + 10), 10 + (i // cols) * (h + 10)))
    return sheet


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="phonesim_gallery.png")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--width", type=int, default=270)
    args = ap.parse_args(argv)
    gallery(args.seed, args.width).save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
