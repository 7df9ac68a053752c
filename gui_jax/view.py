"""Trajectory viewer: one self-contained HTML page of a run's episodes (no server, no CDN, no network).

    python -m gui_jax.view RUN_OR_EPISODES --out report.html [--limit 100] [--width 270]

RUN_OR_EPISODES is a run folder, an episode store, or one episode folder. Every folder at or below it
that holds an `episode.json` (expert or synthesised episodes: generate_episodes, a job's episodes/) or a
`trajectory.json` (agent rollouts in core/serialize.save_trajectory's format) becomes one episode of the
page: its goal, template and outcome, then per step the screenshot with the action drawn on it (a ring at a tap, an arrow for a swipe or a
scroll), the response, the parsed action, the step reward and the reward model's score when the step
carries one (`info["rm_score"]`). Screens stored without pixels (render=False: a 1x1 placeholder) are
drawn as wireframes of their UI elements. Filters (template, outcome) are plain JavaScript in the page.

Actions are in screen pixels (`info["coords"] = "screen"`, the default: PhoneSim's oracle, the rollout
engine) or in pixels of the stored screenshot (`info["coords"] = "image"`); element-only actions are
drawn at their element's centre.
"""
from __future__ import annotations

import argparse
import base64
import dataclasses
import html
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
from PIL import Image, ImageDraw

from gui_jax.core.serialize import EpisodeFormatError, load_episode, load_trajectory
from gui_jax.core.types import POINT_ACTIONS, Action, Observation

RECORDS = ("trajectory.json", "episode.json")
EXPECTED = ("episode folders (episode.json + obs_*.png: generate_episodes, a job's episodes/) or trajectory "
            "folders (trajectory.json + obs_*.png: core/serialize.save_trajectory)")


class ViewError(ValueError):
    """The viewer cannot build a page from the given path (the message names the path and what it expected)."""


@dataclass
class Mark:
    """An action drawn on a screenshot, in the displayed image's pixels: a tap (x, y) or an arrow to (x2, y2)."""
    kind: str                    # tap | arrow
    x: float
    y: float
    x2: Optional[float] = None
    y2: Optional[float] = None


@dataclass
class ViewStep:
    image: np.ndarray            # what the page shows (HxWx3 uint8)
    action: str = ""             # the parsed action, compact ("" on the final screen)
    response: str = ""
    reward: Optional[float] = None
    rm_score: Optional[float] = None
    marks: list[Mark] = field(default_factory=list)
    note: str = ""               # e.g. "final screen", "unparsable response"


@dataclass
class ViewEpisode:
    source: str                  # the folder, relative to the root given
    kind: str                    # trajectory | episode
    goal: str
    template: str
    success: Optional[bool]
    steps: list[ViewStep]
    rm_score: Optional[float] = None


# ------------------------------------------------------------------------------------------ screens and marks
def _is_placeholder(image: np.ndarray) -> bool:
    return image.shape[0] <= 2 or image.shape[1] <= 2


def wireframe(obs: Observation, width: int) -> np.ndarray:
    """The UI elements' boxes and labels on white, at `width` pixels wide (screens stored without pixels)."""
    sw, sh = obs.screen_size
    s = width / sw
    im = Image.new("RGB", (width, max(1, round(sh * s))), (250, 250, 250))
    d = ImageDraw.Draw(im)
    for e in obs.ui_elements:
        x1, y1, x2, y2 = (v * s for v in e.bounds)
        if x2 - x1 < 2 or y2 - y1 < 2:
            continue
        d.rectangle((x1, y1, x2, y2), outline=(70, 110, 200) if e.clickable else (190, 190, 190))
        label = e.text or e.content_desc
        if label:
            d.text((x1 + 2, y1 + 1), label[:40], fill=(30, 30, 30))
    return np.asarray(im)


def display_image(obs: Observation, width: int) -> tuple[np.ndarray, float, float]:
    """(the image the page shows, its scale from screen x, from screen y)."""
    if _is_placeholder(obs.screenshot):
        image = wireframe(obs, width)
    else:
        image = obs.screenshot
        if image.shape[1] > width:
            h = max(1, round(image.shape[0] * width / image.shape[1]))
            image = np.asarray(Image.fromarray(image).resize((width, h), Image.BILINEAR))
    sw, sh = obs.screen_size
    return image, image.shape[1] / sw, image.shape[0] / sh


def action_point(action: Action, obs: Observation) -> Optional[tuple[float, float]]:
    """Where a point action lands, in screen pixels: its x, y, else its element's centre."""
    if action.x is not None and action.y is not None:
        return float(action.x), float(action.y)
    if action.element is not None:
        for e in obs.ui_elements:
            if e.index == action.element:
                return e.center
    return None


def action_marks(action: Optional[Action], obs: Observation, sx: float, sy: float) -> list[Mark]:
    """The marks of `action` (screen pixels) on an image scaled by (sx, sy) from the screen."""
    if action is None:
        return []
    if action.type in POINT_ACTIONS:
        p = action_point(action, obs)
        return [] if p is None else [Mark("tap", p[0] * sx, p[1] * sy)]
    if action.type == "swipe":
        return [Mark("arrow", action.x * sx, action.y * sy, action.x2 * sx, action.y2 * sy)]
    if action.type == "scroll" and action.direction:
        w, h = obs.screen_size[0] * sx, obs.screen_size[1] * sy
        dx, dy = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}[action.direction]
        return [Mark("arrow", w / 2, h / 2, w / 2 + dx * w / 4, h / 2 + dy * h / 4)]
    return []


def action_text(action: Optional[Action]) -> str:
    if action is None:
        return ""
    args = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}"
                     for k, v in action.to_dict().items() if k != "type")
    return f"{action.type}({args})"


def to_screen(action: Action, obs: Observation) -> Action:
    """`action` with its coordinates moved from the stored screenshot's pixels to the screen's."""
    fx, fy = obs.screen_size[0] / obs.screenshot.shape[1], obs.screen_size[1] / obs.screenshot.shape[0]
    moved = {k: getattr(action, k) * f for k, f in (("x", fx), ("y", fy), ("x2", fx), ("y2", fy))
             if getattr(action, k) is not None}
    return dataclasses.replace(action, **moved)


def _step(obs: Observation, action: Optional[Action], width: int, coords: str, **kw) -> ViewStep:
    image, sx, sy = display_image(obs, width)
    drawn = action
    if action is not None and coords == "image" and not _is_placeholder(obs.screenshot):
        drawn = to_screen(action, obs)
    return ViewStep(image=image, action=action_text(action), marks=action_marks(drawn, obs, sx, sy), **kw)


def _score(info: dict) -> Optional[float]:
    v = info.get("rm_score")
    return None if v is None else float(v)


# ------------------------------------------------------------------------------------------ loading
def find_records(root: Path) -> list[Path]:
    """Every episode.json / trajectory.json at or below `root`, in path order."""
    if not root.exists():
        raise ViewError(f"{root}: no such file or directory (expected a run folder or {EXPECTED})")
    if root.is_file():
        if root.name in RECORDS:
            return [root]
        raise ViewError(f"{root}: not an episode record (expected a folder holding {EXPECTED})")
    found = [p for name in RECORDS for p in root.rglob(name)]
    if not found:
        raise ViewError(f"{root}: no episodes in it or below it (expected {EXPECTED})")
    return sorted(found)


def load_view_episode(record: Path, root: Path, width: int) -> ViewEpisode:
    folder = record.parent
    source = str(folder.relative_to(root)) if folder != root and root in folder.parents else folder.name
    if record.name == "trajectory.json":
        tr = load_trajectory(folder)
        coords = tr.info.get("coords", "screen")
        steps = [_step(s.observation, s.action, width, coords, response=s.response, reward=float(s.reward),
                       rm_score=_score(s.info), note="" if s.action is not None else "unparsable response")
                 for s in tr.steps]
        template = tr.info.get("template") or tr.task_id.split("#")[0]
        return ViewEpisode(source, "trajectory", tr.goal, template, bool(tr.success), steps, _score(tr.info))
    ep = load_episode(folder)
    coords = ep.info.get("coords", "screen")
    steps = [_step(o, a, width, coords, response=ins, note="expert step" if ins else "")
             for o, a, ins in zip(ep.observations, ep.actions, ep.step_instructions)]
    if len(ep.observations) > len(ep.actions):
        steps.append(_step(ep.observations[-1], None, width, coords, note="final screen"))
    success = ep.info.get("success")
    return ViewEpisode(source, "episode", ep.goal, ep.template or ep.episode_id.split("#")[0],
                       None if success is None else bool(success), steps, _score(ep.info))


def load_view(path: str | Path, *, limit: Optional[int] = None, width: int = 270) -> tuple[list[ViewEpisode], int]:
    """(the first `limit` episodes at or below `path`, how many there are)."""
    root = Path(path)
    records = find_records(root)
    base = root if root.is_dir() else root.parent
    chosen = records if limit is None else records[:limit]
    out = []
    for r in chosen:
        try:
            out.append(load_view_episode(r, base, width))
        except (EpisodeFormatError, ValueError, OSError) as e:
            raise ViewError(f"{r}: cannot read this episode: {e}") from None
    return out, len(records)


# ------------------------------------------------------------------------------------------ the page
def png_data_uri(image: np.ndarray) -> str:
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image), mode="RGB").save(buf, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _svg(step: ViewStep) -> str:
    h, w = step.image.shape[:2]
    parts = [f'<svg class="marks" viewBox="0 0 {w} {h}" width="{w}" height="{h}">']
    r = max(4.0, w / 30)
    for m in step.marks:
        if m.kind == "tap":
            parts.append(f'<circle class="mark tap" cx="{m.x:.1f}" cy="{m.y:.1f}" r="{r:.1f}"/>'
                         f'<circle class="mark dot" cx="{m.x:.1f}" cy="{m.y:.1f}" r="{r / 4:.1f}"/>')
        else:
            parts.append(f'<line class="mark arrow" x1="{m.x:.1f}" y1="{m.y:.1f}" x2="{m.x2:.1f}" y2="{m.y2:.1f}" '
                         f'marker-end="url(#head)"/><circle class="mark dot" cx="{m.x:.1f}" cy="{m.y:.1f}" '
                         f'r="{r / 3:.1f}"/>')
    return "".join(parts) + "</svg>"


def _num(v: Optional[float]) -> str:
    return "" if v is None else f"{v:.3f}"


def _step_html(i: int, step: ViewStep) -> str:
    h, w = step.image.shape[:2]
    rows = [("action", step.action or "—"), ("response", step.response or "—")]
    if step.reward is not None:
        rows.append(("reward", _num(step.reward)))
    if step.rm_score is not None:
        rows.append(("RM score", _num(step.rm_score)))
    dl = "".join(f'<dt>{k}</dt><dd class="{k.split()[0].lower()}">{html.escape(v)}</dd>' for k, v in rows)
    note = f'<div class="note">{html.escape(step.note)}</div>' if step.note else ""
    return (f'<figure class="step" data-step="{i}"><div class="shot" style="width:{w}px;height:{h}px">'
            f'<img alt="step {i}" width="{w}" height="{h}" src="{png_data_uri(step.image)}">{_svg(step)}</div>'
            f'<figcaption><b>step {i}</b>{note}<dl>{dl}</dl></figcaption></figure>')


def _outcome(success: Optional[bool]) -> str:
    return "unknown" if success is None else ("success" if success else "failure")


def episode_html(ep: ViewEpisode) -> str:
    outcome = _outcome(ep.success)
    rm = f' · RM score {_num(ep.rm_score)}' if ep.rm_score is not None else ""
    steps = "".join(_step_html(i, s) for i, s in enumerate(ep.steps))
    return (f'<section class="episode {outcome}" data-template="{html.escape(ep.template, quote=True)}" '
            f'data-outcome="{outcome}"><h2><span class="badge {outcome}">{outcome}</span> '
            f'{html.escape(ep.goal)}</h2><div class="meta">{html.escape(ep.template)} · {ep.kind} · '
            f'{len(ep.steps)} screens{rm} · <code>{html.escape(ep.source)}</code></div>'
            f'<div class="steps">{steps}</div></section>')


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em;color:#222}
header{position:sticky;top:0;background:#fff;padding:.6em 0;border-bottom:1px solid #ddd;z-index:2}
.filters button{margin-right:.3em}.filters button.on{background:#234;color:#fff}
.episode{border-bottom:1px solid #eee;padding:.6em 0}.episode h2{font-size:16px;margin:.2em 0}
.meta{color:#666;font-size:12px}.steps{display:flex;gap:12px;overflow-x:auto;padding:.5em 0}
.step{margin:0;flex:0 0 auto;max-width:320px}.shot{position:relative}.shot img{display:block;border:1px solid #ccc}
.marks{position:absolute;left:0;top:0;pointer-events:none}
.mark.tap{fill:rgba(255,40,40,.25);stroke:#f22;stroke-width:2}.mark.dot{fill:#f22}
.mark.arrow{stroke:#f22;stroke-width:3}
dl{margin:.3em 0;display:grid;grid-template-columns:auto 1fr;gap:0 .5em;font-size:12px}
dt{color:#777}dd{margin:0;white-space:pre-wrap;word-break:break-word}.note{color:#a60;font-size:12px}
.badge{font-size:11px;padding:1px 6px;border-radius:8px;color:#fff;vertical-align:middle}
.badge.success{background:#2a2}.badge.failure{background:#c33}.badge.unknown{background:#888}
"""

JS = """
(function(){
  var outcome = "all", template = "";
  function apply(){
    var shown = 0, all = document.querySelectorAll("section.episode");
    all.forEach(function(s){
      var ok = (outcome === "all" || s.dataset.outcome === outcome) && (!template || s.dataset.template === template);
      s.style.display = ok ? "" : "none"; if (ok) shown++;
    });
    document.getElementById("shown").textContent = shown + " of " + all.length + " episodes shown";
    document.querySelectorAll("#outcome-filter button").forEach(function(b){
      b.classList.toggle("on", b.dataset.outcome === outcome);
    });
  }
  document.querySelectorAll("#outcome-filter button").forEach(function(b){
    b.addEventListener("click", function(){ outcome = b.dataset.outcome; apply(); });
  });
  document.getElementById("template-filter").addEventListener("change", function(e){
    template = e.target.value; apply();
  });
  apply();
})();
"""


def render_page(episodes: list[ViewEpisode], *, title: str, total: Optional[int] = None) -> str:
    """The whole page as one string (styles, script and images inline)."""
    templates = sorted({e.template for e in episodes})
    options = "".join(f'<option value="{html.escape(t, quote=True)}">{html.escape(t)}</option>' for t in templates)
    counts = {o: sum(_outcome(e.success) == o for e in episodes) for o in ("success", "failure", "unknown")}
    buttons = "".join(f'<button type="button" data-outcome="{o}">{label}</button>' for o, label in
                      (("all", "All"), ("success", f"Successes ({counts['success']})"),
                       ("failure", f"Failures ({counts['failure']})"), ("unknown", f"Unscored ({counts['unknown']})")))
    more = (f" — the first {len(episodes)} of {total} (raise --limit for more)"
            if total is not None and total > len(episodes) else "")
    body = "".join(episode_html(e) for e in episodes)
    arrow = ('<svg width="0" height="0" style="position:absolute"><defs><marker id="head" viewBox="0 0 10 10" '
             'refX="8" refY="5" markerWidth="5" markerHeight="5" orient="auto-start-reverse">'
             '<path d="M0,0L10,5L0,10z" fill="#f22"/></marker></defs></svg>')
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<style>{CSS}</style></head><body>{arrow}<header><h1 style="font-size:18px;margin:0">'
            f'{html.escape(title)}</h1><div>{len(episodes)} episodes{html.escape(more)}</div>'
            f'<div class="filters"><span id="outcome-filter">{buttons}</span> template '
            f'<select id="template-filter"><option value="">all</option>{options}</select> '
            f'<span id="shown"></span></div></header><main>{body}</main><script>{JS}</script></body></html>')


def write_report(path: str | Path, out: str | Path, *, limit: Optional[int] = 100, width: int = 270) -> int:
    """Writes the page of the episodes at or below `path` to `out`; returns how many it shows."""
    episodes, total = load_view(path, limit=limit, width=width)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_page(episodes, title=f"gui_jax trajectories: {path}", total=total), encoding="utf-8")
    return len(episodes)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gui_jax.view", description=__doc__.split("\n\n")[0])
    p.add_argument("path", help="a run folder, an episode store or one episode/trajectory folder")
    p.add_argument("--out", required=True, help="the HTML file to write")
    p.add_argument("--limit", type=int, default=100, help="at most this many episodes (0 = all)")
    p.add_argument("--width", type=int, default=270, help="screenshot width in the page, pixels")
    args = p.parse_args(argv)
    try:
        n = write_report(args.path, args.out, limit=args.limit or None, width=args.width)
    except ViewError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {n} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
