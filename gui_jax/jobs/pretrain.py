"""Job `pretrain`: pretrain the small base model on the synthetic screen stream (train/pretrain.py), then
write it as a Hugging Face Qwen2.5-VL directory with a model card.

    python -m gui_jax.main --config configs/pretrain_tiny.py --workdir runs/pretrain_tiny

Re-running the same command resumes from <workdir>/checkpoints (after kill -9 or SIGTERM; checkpoints every
`pretrain.checkpoint_every` updates and every `pretrain.checkpoint_minutes`). Writes metrics.jsonl and
TensorBoard scalars (loss, reading accuracy on held-out labels, tokens/s), training_curves.png,
segments.jsonl (one line per evaluation: which run segment, hardware, its seconds so far), results.json and
the exported base with its card (README.md) under <workdir>/base.
"""
from __future__ import annotations

import json
import os
import sys
import time

from gui_jax.config_check import RunError
from gui_jax.train.logger import MetricsLogger


def _hardware() -> str:
    import jax
    d = jax.devices()[0]
    kind = d.platform if d.device_kind == d.platform else f"{d.platform} {d.device_kind}"
    return f"{kind} × {len(jax.devices())}, {os.cpu_count()} CPU cores"


def _metric_series(workdir: str, name: str) -> list[tuple[int, float]]:
    """(step, value) of one scalar from metrics.jsonl, the last value per step (a resumed run rewrites steps)."""
    path, out = os.path.join(workdir, "metrics.jsonl"), {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                if rec.get("name") == name:
                    out[int(rec["step"])] = float(rec["value"])
    return sorted(out.items())


def run_segments(workdir: str) -> list[dict]:
    """The last record of each run segment in segments.jsonl (seconds, steps, hardware)."""
    path, last = os.path.join(workdir, "segments.jsonl"), {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                last[rec["segment"]] = rec
    return list(last.values())


PHASE_HEADER = "### Phase "


def parent_phases(checkpoint: str) -> list[str]:
    """The provenance of the snapshot a run continues from: its card's phase sections ("### Phase k …" blocks
    under "## How it was made"; a card from before phases counts as one phase). [] for no card."""
    from gui_jax.models.builtin import is_builtin, resolve_checkpoint
    if not checkpoint:
        return []
    path = os.path.join(resolve_checkpoint(checkpoint) if is_builtin(checkpoint) else checkpoint, "README.md")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return card_phases(f.read())


def grown_from(source: str, agent):
    """agent's params (freshly initialised at the larger shape) holding the snapshot `source`'s weights, with the
    same logits (models/qwen2_5_vl/grow.py). A first run only: a rerun resumes over them from its checkpoint."""
    from flax import nnx

    from gui_jax.models.builtin import resolve_checkpoint
    from gui_jax.models.qwen2_5_vl.grow import grow_params
    from gui_jax.models.qwen2_5_vl.hf_io import load_hf_checkpoint
    from gui_jax.rl.agent import load_tokenizer
    path = resolve_checkpoint(source)
    small_tok = load_tokenizer("auto", path)
    probe = "Tap 'Quiet Fire' 12 $3.50 <|im_end|>"
    if small_tok.encode(probe) != agent.tokenizer.encode(probe):
        raise RunError(f"pretrain.grow_from {source!r}: its tokenizer differs from the preset's vocabulary "
                       f"(model.tokenizer = {agent.cfg.get('tokenizer', 'auto')!r})")
    small, _ = load_hf_checkpoint(path, param_dtype="float32")
    try:
        return grow_params(nnx.state(small, nnx.Param), agent.params, agent.model_config.text.head_dim)
    except ValueError as e:
        raise RunError(f"pretrain.grow_from {source!r}: {e}") from None


def agent_shape(config) -> str:
    m, preset = config.model, "the preset's"
    shape = f"{m.get('num_hidden_layers') or preset} layers, MLP width {m.get('intermediate_size') or preset}"
    if m.get("hidden_size"):
        shape += f", width {m.hidden_size} with {m.get('num_attention_heads') or preset} heads"
    return shape + (f", {m.num_key_value_heads} key/value heads" if m.get("num_key_value_heads") else "")


def token_weights_line(cfg) -> str:
    """The card's words for the loss weights of single response tokens (pretrain.decision_weight, action_weight)."""
    decision, action = float(cfg.get("decision_weight", 1.0)), float(cfg.get("action_weight", 1.0))
    return ((f"its stop-or-act token weighs {decision:g}; " if decision != 1.0 else "")
            + (f"every action-name token weighs {action:g}; " if action != 1.0 else ""))


def read_items_line(cfg) -> str:
    """The card's words for pretrain.relabel (read items with fresh made-up label words) and
    pretrain.read_imperative (read goals written as commands)."""
    p, q = float(cfg.get("relabel", 0.0)), float(cfg.get("read_imperative", 0.0))
    return (f"read items relabelled with fresh made-up words with probability {p:g}; " if p else "") + \
        (f"read goals written as commands (no question mark) with probability {q:g}; " if q else "")


def card_phases(text: str) -> list[str]:
    """A model card's phase sections, oldest first (see `parent_phases`)."""
    made = text.split("## How it was made", 1)[1] if "## How it was made" in text else ""
    made = made.split("\n## ", 1)[0].strip()
    if not made:
        return []
    if PHASE_HEADER not in made:
        return [f"{PHASE_HEADER}1 (from random weights)\n{made}"]
    return [PHASE_HEADER + block.strip() for block in made.split(PHASE_HEADER)[1:]]


RUN_CONTROL = ("--config.pretrain.max_minutes", "--config.pretrain.stop_after_steps")


def first_overrides(overrides: list[str], changes: list[dict]) -> list[str]:
    """The command-line overrides a run started with: the last command's, with every field that a logged
    recipe change touched set back to its value before the first such change (left out: a field the run's
    config did not have then)."""
    first: dict = {}
    for record in changes:
        for path, (old, _) in record.get("fields", {}).items():
            first.setdefault(path, old)
    kept = [a for a in overrides if a.split("=", 1)[0].removeprefix("--config.") not in first]
    def flag(v) -> str:   # the command line's spelling of a flattened config value
        return "(" + ",".join(map(str, v)) + ")" if isinstance(v, list) else str(v)
    return kept + [f"--config.{path}={flag(value)}" for path, value in first.items() if value is not None]


def model_card(config, workdir: str, out: dict) -> str:
    """README.md of the exported base: how it was made and what it reads, from the run's own records. A run that
    continues from a snapshot (model.checkpoint set) lists the snapshot's phases before its own, so the card
    keeps the command and first losses of the phase that started from random weights."""
    from gui_jax.eval.metrics import wilson_interval
    from gui_jax.jobs.common import recipe_changes, version_info
    cfg = config.pretrain
    losses = _metric_series(workdir, "pretrain/loss")
    counted = _metric_series(workdir, "pretrain/batch_tokens")
    tokens = sum(v for _, v in counted)
    # updates without a record (a run segment from before the count existed) at the mean of the counted ones
    uncounted = max(out["steps"] - int(cfg.get("first_step", 0)) - len(counted), 0)
    tokens += uncounted * tokens / max(len(counted), 1)
    segments = run_segments(workdir)
    seconds = sum(s["seconds"] for s in segments)
    tail = [v for _, v in losses[-50:]]
    reading, at = [], None
    for prefix, screens in (("", "last stage"), ("first_stage/", "first stage")):
        for key, n in sorted(out.get("reading_n", {}).items()):
            if key.rpartition("/")[0] != prefix.rstrip("/"):
                continue
            name = key.rpartition("/")[2]
            series = _metric_series(workdir, f"pretrain/{prefix}reading_acc_{name}")
            if not series:
                continue
            at, acc = series[-1]
            lo, hi = wilson_interval(round(acc * n), n)
            reading.append(f"| {name} | {screens} | {acc:.3f} | [{lo:.3f}, {hi:.3f}] | {n} |")
    first = ", ".join(f"{v:.4f}" for _, v in losses[:20])
    first_steps = f"{losses[0][0]}-{losses[min(20, len(losses)) - 1][0]}" if losses else "none"
    # run control (when this segment stopped) is not part of the recipe a rerun reproduces
    overrides = [a for a in sys.argv[1:] if a.startswith("--config.") and not a.startswith(RUN_CONTROL)]
    changes = recipe_changes(workdir)
    overrides = first_overrides(overrides, changes)   # the command that started this phase
    start, snapshot = int(cfg.get("first_step", 0)), config.model.checkpoint or cfg.get("grow_from", "")
    # any run that loads a snapshot continues it (first_step 0 only restarts the update count and curriculum)
    parents = parent_phases(snapshot) if snapshot else []
    origin = "from random weights"
    if snapshot:
        origin = f"from the update-{start:,} snapshot `{snapshot}`" if start else f"from the snapshot `{snapshot}`"
        if not config.model.checkpoint:
            origin += f", grown to {agent_shape(config)}"
    phase = [
        f"{PHASE_HEADER}{len(parents) + 1} (updates {start + 1:,}-{out['steps']:,}, {origin})",
        f"- Command: `{' '.join(['python -m gui_jax.main --config configs/pretrain_tiny.py --workdir <dir>', *overrides])}`",
        f"- Generator: gui_jax {version_info()['gui_jax_version']} ({version_info()['git_describe']}): "
        "gui_jax/train/pretrain_data.py (labels: pretrain_labels.py, layouts: pretrain_screens.py, "
        "pretrain_apps.py)",
        f"- Objectives and mix: {cfg.mix}; goals per screen {cfg.get('goals_per_screen', 1)}; "
        f"label kinds: {cfg.get('label_kinds', '') or 'the defaults'}; "
        f"PhoneSim app pages {cfg.get('app_pages', 0.0)}"
        f"{' with PhoneSim answer questions' if cfg.get('page_answers', False) else ''}; "
        f"token-word text values {cfg.get('token_values', 0.0)}; "
        f"{'part-of-line answers (artist, priority); ' if cfg.get('part_answers', False) else ''}"
        f"{'earlier steps on %s of goals; ' % cfg.get('history') if cfg.get('history', 0.0) else ''}"
        f"{'an item with earlier steps asks its first goal alone; ' if cfg.get('history_alone', False) else ''}"
        f"{token_weights_line(cfg)}"
        f"{read_items_line(cfg)}"
        f"launch goals {cfg.get('launch_goals', 'topics')}; "
        f"prompt_loss_weight {cfg.prompt_loss_weight}; UI text index "
        f"{'after' if config.prompt.get('ui_text_index_last', False) else 'before'} the label",
        f"- Curriculum (min-max lines @ shared-word probability : updates): {cfg.curriculum}",
        f"- Supervised attention: pointer_weight {cfg.get('pointer_weight', 0.0)}"
        + (f" on hops {cfg.pointer_layout}" if cfg.get("pointer_weight", 0.0) else "")
        + (", toggle items too" if cfg.get("pointer_weight", 0.0) and cfg.get("toggle_pointers", False) else "")
        + (f", index readout {cfg.index_readout_weight}" if cfg.get("index_readout_weight", 0.0) else "")
        + (f", value readout {cfg.value_readout_weight}" if cfg.get("value_readout_weight", 0.0) else "")
        + f"; init gain {cfg.get('init_gain', 0.0) or 'std 0.02'}"
        + (f", residual outputs x{cfg.init_residual_gain}" if cfg.get("init_gain", 0.0) else ""),
        f"- Updates: {out['steps'] - start} of batch {cfg.batch_size} items; {int(tokens):,} tokens"
        f"{f' ({uncounted} updates estimated at the mean)' if uncounted else ''}; AdamW lr "
        f"{cfg.learning_rate} ({cfg.schedule}, warm-up {cfg.warmup_steps}"
        f"{f', the last {cfg.decay_steps} updates annealed to 0' if cfg.schedule == 'wsd' else ''}), clip "
        f"{cfg.max_grad_norm}",
        f"- Hardware: {'; '.join(sorted({s['hardware'] for s in segments})) or _hardware()}; wall time "
        f"{seconds / 3600:.2f} h over {len(segments)} run segment(s)",
        *[f"- Resumed at update {r['from_step']} with a changed recipe: " + "; ".join(r["changes"])
          for r in changes],
        f"- Final loss (mean of the last {len(tail)} updates): {sum(tail) / max(len(tail), 1):.4f}",
        f"- Losses of updates {first_steps} (reproduction check): {first}",
    ]
    return "\n".join([
        "# gui_jax tiny-base",
        "",
        "A small model of the Qwen2.5-VL architecture (the `tiny` preset) pretrained by gui_jax from random weights",
        "on synthetic phone screens in the tiny agent's prompt format (UI text with element indices), so that it",
        "finds the element a goal names before any task training. Load it with `--config.model.checkpoint=builtin:tiny-base`.",
        "",
        "## How it was made",
        *[p + "\n" for p in parents],
        *phase,
        "",
        "## Reading accuracy",
        "Teacher-forced exact match of the whole expert response (a lower bound on greedy success) on screens",
        "whose labels come from the `reading_eval` pool, which shares no word with the pretraining labels or with",
        f"PhoneSim's tasks; the first and the last curriculum stage's screen sizes and distractors; measured at "
        f"update {at}.",
        "",
        "| objective | screens | accuracy | 95 % Wilson | items |",
        "|---|---|---|---|---|",
        *reading,
        "",
    ])


def run(config, workdir: str) -> None:
    from gui_jax.jobs.export import export_agent
    from gui_jax.models.export_record import prompt_format
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig
    from gui_jax.train.pretrain import curriculum_of, parse_mix, train_pretrain

    cfg = config.pretrain
    try:  # configuration errors before any model is built
        stages = curriculum_of(cfg)
        parse_mix(cfg.mix)
        from gui_jax.train.attention_pointers import READOUT_SCALES
        if cfg.get("readout_scale", "own") not in READOUT_SCALES:
            raise ValueError(f"pretrain.readout_scale {cfg.readout_scale!r}: one of {', '.join(READOUT_SCALES)}")
        if float(cfg.get("value_readout_weight", 0.0)) > 0 and not (
                float(cfg.get("pointer_weight", 0.0)) > 0 and "read_match=" in cfg.pointer_layout.replace(" ", "")):
            raise ValueError(f"pretrain.value_readout_weight {cfg.value_readout_weight} reads out the read_match hop: "
                             f"it needs pretrain.pointer_weight > 0 and read_match in pretrain.pointer_layout "
                             f"({cfg.pointer_layout!r})")
        if cfg.get("toggle_pointers", False) and not float(cfg.get("pointer_weight", 0.0)) > 0:
            raise ValueError("pretrain.toggle_pointers adds the tap hops to toggle items: it needs "
                             f"pretrain.pointer_weight > 0 (got {cfg.get('pointer_weight', 0.0)})")
        if int(cfg.num_steps) <= int(cfg.get("first_step", 0)):
            raise ValueError(f"pretrain.num_steps {cfg.num_steps} is not above pretrain.first_step "
                             f"{cfg.first_step}: nothing to train (num_steps is the update to reach)")
        prompt_cfg = PromptConfig(**config.prompt.to_dict())
    except (TypeError, ValueError) as e:
        raise RunError(str(e)) from None
    widest = max(s.difficulty.max_lines for s in stages)
    if widest > prompt_cfg.max_ui_lines:
        raise RunError(f"pretrain.curriculum has screens of {widest} lines but prompt.max_ui_lines = "
                       f"{prompt_cfg.max_ui_lines}; raise prompt.max_ui_lines")
    os.makedirs(workdir, exist_ok=True)
    agent = Agent(config, seed=config.seed)
    if float(cfg.get("init_gain", 0.0)) > 0 and not config.model.checkpoint:   # a checkpoint resumes over it
        from gui_jax.models.qwen2_5_vl.layers import rescale_init
        agent.set_params(rescale_init(agent.params, float(cfg.init_gain), under="language_model",
                                      residual_gain=float(cfg.get("init_residual_gain", 1.0))))
    if cfg.get("grow_from", ""):
        if config.model.checkpoint:
            raise RunError(f"pretrain.grow_from {cfg.grow_from!r} grows a snapshot into the preset's shape "
                           f"(model.num_hidden_layers / intermediate_size / hidden_size / heads); "
                           f"model.checkpoint must then be '' (got {config.model.checkpoint!r})")
        agent.set_params(grown_from(cfg.grow_from, agent))
    try:
        from gui_jax.train.pretrain import pointer_layout
        pointer_layout(cfg, agent.model_config)
    except ValueError as e:
        raise RunError(f"pretrain.pointer_layout: {e}") from None
    logger = MetricsLogger(workdir)
    start, segment, hardware = time.time(), time.strftime("%Y-%m-%dT%H:%M:%S"), _hardware()

    def on_eval(point: dict) -> None:
        with open(os.path.join(workdir, "segments.jsonl"), "a") as f:
            f.write(json.dumps({"segment": segment, "hardware": hardware, "step": point["step"],
                                "seconds": round(time.time() - start, 1)}) + "\n")

    out = train_pretrain(agent, cfg, prompt_cfg, workdir=workdir, logger=logger, seed=int(config.seed),
                         on_eval=on_eval)
    logger.plot()
    logger.close()
    base = os.path.join(workdir, "base")
    files = export_agent(agent, base, dtype=cfg.export_dtype or None,
                         source={"job": "pretrain", "steps": out["steps"], "workdir": os.path.abspath(workdir)},
                         prompt=prompt_format(prompt_cfg))
    with open(os.path.join(base, "README.md"), "w") as f:
        f.write(model_card(config, workdir, out))
    out.update(seconds_this_run=round(time.time() - start, 1), exported=sorted(files + ["README.md"]))
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump(out, f, indent=1)
    # a rerun of a finished run evaluates nothing: report the run's last logged evaluation
    if "reading_acc" in out["reading"]:
        at, acc = out["eval_step"], out["reading"]["reading_acc"]
    else:
        at, acc = (_metric_series(workdir, "pretrain/reading_acc")[-1:] or [(None, float("nan"))])[0]
    print(f"pretrain: {out['steps']} updates; reading accuracy (held-out labels) {acc:.3f} at update {at}; "
          f"base and its card in {base}")
