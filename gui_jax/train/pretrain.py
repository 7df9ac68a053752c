"""Pretraining the small base model on the endless synthetic screen stream (train/pretrain_data.py).

A run is `num_steps` updates of the SFT loss (the expert response, plus `prompt_loss_weight` · next-token loss
on the prompt, i.e. mostly the screen text) over batches drawn from `PretrainSource`. Batch s holds the items
s·B … s·B + B − 1 of the stream, and item i is a pure function of (seed, i), so the data position is exact
after a resume (`fit` stores the Grain iterator state beside the Orbax checkpoint).

Curriculum (`curriculum`): comma-separated stages `min-max@p:steps`, screens of min..max UI lines whose
distractors share a word with the target with probability p, for `steps` updates; the last stage may omit
`:steps` and runs to the end. Example: "4-8@0:500,4-16@0.5:1500,8-40@1" (screens up to 40 lines need
prompt.max_ui_lines ≥ 40).

Reading accuracy: teacher-forced exact match of the whole expert response on items of the `reading_eval`
label pool (words pretraining never samples). Every token's argmax equal to the expert's means greedy
decoding writes exactly the expert response, so this is a lower bound on greedy success.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.models.sampling import first_argmax
from gui_jax.rl.batch import build_batch, model_forward_logprobs
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.attention_pointers import PiecePointers, parse_layout
from gui_jax.train.pretrain_data import (OBJECTIVES, Difficulty, ObjectiveMix, PretrainSource, encode_item,
                                         reading_eval_items)
from gui_jax.train.pretrain_labels import LABEL_KINDS
from gui_jax.train.pretrain_relabel import relabel_item

RELABEL_STREAM = 0x5EAB   # the third seed word of a read item's relabelling draws (its own stream)


@dataclasses.dataclass(frozen=True)
class Stage:
    """One curriculum stage: `steps` updates (None: to the end) on screens of this difficulty."""
    difficulty: Difficulty
    steps: Optional[int]


def _parse_weights(spec: str, field: str, what: str, known: tuple) -> dict[str, float]:
    """'a:0.4, b:0.6' → {"a": 0.4, "b": 0.6}; a bad entry is a ValueError naming pretrain.<field>."""
    weights = {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        name, _, w = part.partition(":")
        try:
            weights[name.strip()] = float(w)
        except ValueError:
            raise ValueError(f"pretrain.{field} entry {part!r}: write '{what}:weight' with {what}s {known}") from None
    return weights


def parse_label_kinds(spec: str) -> Optional[dict]:
    """'words:0.4,pieces:0.3' → {"words": 0.4, "pieces": 0.3}; '' → None (the default kinds)."""
    return _parse_weights(spec, "label_kinds", "kind", LABEL_KINDS) or None


def parse_curriculum(spec: str, label_kinds: Optional[dict] = None) -> list[Stage]:
    """'4-8@0:500,8-40@1' → [Stage(Difficulty(4, 8, 0.0), 500), Stage(Difficulty(8, 40, 1.0), None)];
    label_kinds (kind → weight, None: the defaults) applies to every stage."""
    stages = []
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not parts:
        raise ValueError("pretrain.curriculum is empty: write stages 'min-max@p:steps', e.g. '4-8@0:500,8-24@0.5'")
    for k, part in enumerate(parts):
        try:
            shape, _, steps = part.partition(":")
            lines, _, prob = shape.partition("@")
            lo, _, hi = lines.partition("-")
            difficulty = Difficulty(min_lines=int(lo), max_lines=int(hi or lo), shared_word_prob=float(prob or 0.0),
                                    label_kinds=label_kinds)
            n = int(steps) if steps else None
        except ValueError as e:
            raise ValueError(f"pretrain.curriculum stage {k + 1} {part!r}: {e} (write 'min-max@p:steps')") from None
        if n is None and k != len(parts) - 1:
            raise ValueError(f"pretrain.curriculum stage {k + 1} {part!r} has no ':steps' but is not the last stage")
        if n is not None and n <= 0:
            raise ValueError(f"pretrain.curriculum stage {k + 1} {part!r}: steps must be > 0")
        stages.append(Stage(difficulty, n))
    return stages


def curriculum_of(cfg) -> list[Stage]:
    """The stages of a `pretrain` config block: its curriculum with its label_kinds in every stage."""
    return parse_curriculum(cfg.curriculum, parse_label_kinds(cfg.get("label_kinds", "")))


def parse_mix(spec: str) -> ObjectiveMix:
    """'tap:0.5,read:0.3,state:0.2' → ObjectiveMix (objectives: tap, read, state, home, screen_text, toggle)."""
    return ObjectiveMix(_parse_weights(spec, "mix", "objective", OBJECTIVES))


class CurriculumStream:
    """Items of the pretraining stream as TrainSamples: item i belongs to update i // batch_size and is drawn
    from that update's curriculum stage. Random access, a pure function of (seed, i)."""

    def __init__(self, agent, prompt_cfg: PromptConfig, stages: Sequence[Stage], mix: ObjectiveMix, *,
                 batch_size: int, seed: int, first_step: int = 0, goals_per_screen: int = 1,
                 pointers: bool = False, read_pointers: bool = False, app_pages: float = 0.0,
                 hops: Optional[Sequence[str]] = None, toggle_pointers: bool = False, launch_goals: str = "topics",
                 page_answers: bool = False, token_values: float = 0.0, part_answers: bool = False,
                 history: float = 0.0, history_alone: bool = False, decision_weight: float = 1.0,
                 action_weight: float = 1.0, relabel: float = 0.0,
                 read_imperative: float = 0.0):
        """first_step: the stream starts at update `first_step` (its items and stage), for a run that continues
        from a weights-only snapshot taken there. goals_per_screen: goals answered per screen (PretrainSource).
        pointers: tap and home items carry their attention pointers (train/attention_pointers.py); with
        read_pointers, read items too; hops: only these hops' rows (the layout's). app_pages: the share of items on
        PhoneSim's own app pages (PretrainSource). toggle_pointers (with pointers): toggle items too, their hops
        keyed on the part of the switch / checkbox line the goal names (attention_pointers.item_pointers).
        launch_goals, page_answers, token_values, part_answers: how launch items phrase their goals, whether app
        pages ask PhoneSim's answer questions, the share of text values written as token-word sentences, whether
        songs and tasks are read for a part of a line, the share of goals with earlier steps and whether such an
        item asks its goal alone (PretrainSource). decision_weight: the loss weight of the one response token that
        decides between stopping and acting in an item with earlier steps (1: as every token; among ~1,500
        response tokens an update that single token was not learnt, experiments/results/pretrain_m1.md).
        action_weight: the loss weight of every goal's action-name token (click / answer / open / terminate: the
        token after `{"action": "`), the one token that decides between tapping and reading. relabel: the
        probability that a read item's label words are swapped for fresh made-up words (train/pretrain_relabel.py).
        read_imperative: the share of read goals written as commands (PretrainSource)."""
        # the policy's picklable encoder, not the agent: data-loading worker processes get a copy of the stream
        self.encoder = getattr(agent.policy, "encoder", agent.policy)
        self.batch_size, self.offset = int(batch_size), int(first_step) * int(batch_size)
        self.decision_weight, self.action_weight = float(decision_weight), float(action_weight)
        if not isinstance(relabel, (int, float)) or isinstance(relabel, bool) or not 0.0 <= relabel <= 1.0:
            raise ValueError(f"pretrain.relabel = {relabel!r}: expected a probability in [0, 1]")
        self.relabel_p, self.seed = float(relabel), int(seed)
        self.action_prefix = np.asarray(self.encoder.tokenizer.encode('{"action": "'), np.int32) \
            if self.action_weight != 1.0 or self.decision_weight != 1.0 else None
        self.pointers = PiecePointers(self.encoder.tokenizer, hops) if pointers or read_pointers else None
        self.tap_pointers, self.read_pointers = bool(pointers), bool(read_pointers)
        self.toggle_pointers = bool(pointers) and bool(toggle_pointers)
        self.sources = [PretrainSource(prompt_cfg, mix, s.difficulty, pool="train", seed=seed,
                                       goals_per_screen=goals_per_screen, app_pages=app_pages,
                                       launch_goals=launch_goals, page_answers=page_answers,
                                       token_values=token_values, part_answers=part_answers,
                                       history=history, history_alone=history_alone,
                                       read_imperative=read_imperative) for s in stages]
        ends, at = [], 0
        for s in stages:
            at = at + s.steps if s.steps is not None else None
            ends.append(at)
            if at is None:
                break
        self.ends = ends            # update index where each stage ends (None: never)

    def stage_of(self, step: int) -> int:
        """The curriculum stage of update `step` (0-based); after the last bounded stage, the last one."""
        for k, end in enumerate(self.ends):
            if end is None or step < end:
                return k
        return len(self.ends) - 1

    def __len__(self) -> int:
        return len(self.sources[0]) - self.offset

    def __getitem__(self, i: int):
        i = int(i) + self.offset
        item = self.sources[self.stage_of(i // self.batch_size)][i]
        if self.relabel_p > 0 and item["objective"] == "read":   # no draw at 0: streams unchanged
            rng = np.random.default_rng((self.seed, i, RELABEL_STREAM))
            if rng.random() < self.relabel_p:
                item = relabel_item(item, rng)
        sample = encode_item(self.encoder, item).sample
        decides = self.decision_weight != 1.0 and item.get("earlier_steps", False)
        if self.action_weight != 1.0 or decides:
            names = action_name_positions(sample.response_ids, self.action_prefix)
            if not names.size:
                raise ValueError(f"pretraining item {i}: no action name in its response (no {{\"action\": \" ...)")
            weights = np.ones(sample.response_ids.size, np.float32)
            weights[names] *= self.action_weight
            if decides:   # the first goal's action name: terminate or act after its earlier steps
                weights[names[0]] *= self.decision_weight
            sample.token_weights = weights
        # toggle items click a switch / checkbox line that shows more than the goal's label: their hops key on
        # the named part (toggle_pointers), else they have none
        # goals answered by terminate (`history`: their action is already done) have no look-up to point at
        acting = [t for t in [item, *item["turns"]] if not t.get("done", False)]
        if not acting:
            return sample
        if self.tap_pointers and acting[0]["target_element"] is not None and item["objective"] != "toggle":
            sample.pointers = self.pointers(sample, f"pretraining item {i}")
        elif self.toggle_pointers and item["objective"] == "toggle":
            sample.pointers = self.pointers(sample, f"pretraining item {i}", named=[t["label"] for t in acting])
        elif self.read_pointers and item["objective"] == "read":
            sample.pointers = self.pointers(sample, f"pretraining item {i}", read=True)
        return sample


def action_name_positions(response_ids, prefix) -> np.ndarray:
    """int [n]: the index of the token right after each occurrence of `prefix` (the ids of `{"action": "`) in the
    response: each goal's action name."""
    ids, k = np.asarray(response_ids), len(prefix)
    if ids.size <= k:
        return np.zeros(0, np.int64)
    windows = np.lib.stride_tricks.sliding_window_view(ids[:-1], k)
    return np.flatnonzero((windows == np.asarray(prefix)).all(axis=1)) + k


def exact_match_fn(graphdef, rest):
    """jitted (params, batch) → bool [B]: every response token of the row is the argmax of the model."""
    @jax.jit
    def exact(params, batch):
        model = nnx.merge(graphdef, params, rest)
        _, logits = model_forward_logprobs(model, batch)
        targets = jnp.take_along_axis(batch["input_ids"], batch["target_positions"], axis=1)
        ok = (first_argmax(logits) == targets) | ~batch["target_valid"]
        return ok.all(axis=-1)
    return exact


class ReadingEval:
    """Teacher-forced exact match on fixed `reading_eval` items (labels pretraining never samples), per
    objective and overall."""

    def __init__(self, agent, prompt_cfg: PromptConfig, *, n_items: int, lines_range: tuple[int, int],
                 shared_word_prob: float, seed: int, objectives: Sequence[str] = ("tap", "read"),
                 rows: int = 16):
        self.agent, self.rows = agent, rows
        self.items = reading_eval_items(n_items, lines_range, shared_word_prob, seed=seed + 7919,
                                        prompt_cfg=prompt_cfg, objectives=objectives)
        self.samples = [encode_item(agent.policy, it).sample for it in self.items]
        self.counts = {name: sum(it["objective"] == name for it in self.items)
                       for name in sorted({it["objective"] for it in self.items})}
        self.exact = exact_match_fn(agent.graphdef, agent.rest)

    def __call__(self, params) -> dict:
        hits = []
        for k in range(0, len(self.samples), self.rows):
            chunk = self.samples[k:k + self.rows]
            batch = build_batch(chunk, self.agent.model_config, pad_id=self.agent.tokenizer.pad_id, rows=self.rows)
            hits += [bool(h) for h in np.asarray(self.exact(params, batch))[:len(chunk)]]
        out = {"reading_acc": float(np.mean(hits))}
        for name in sorted({it["objective"] for it in self.items}):
            sel = [h for h, it in zip(hits, self.items) if it["objective"] == name]
            out[f"reading_acc_{name}"] = float(np.mean(sel))
        return out


class Throughput:
    """Tokens per second over the updates since the last call (wall clock)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock, self.tokens, self.since = clock, 0, clock()

    def add(self, n_tokens: int) -> None:
        self.tokens += int(n_tokens)

    def rate(self) -> float:
        now = self.clock()
        rate = self.tokens / max(now - self.since, 1e-9)
        self.tokens, self.since = 0, now
        return rate


class _CountingIterator:
    """Forwards a Grain iterator (next, get_state, set_state) and counts the tokens of what it yields."""

    def __init__(self, inner, meter: Throughput):
        self.inner, self.meter, self.last_tokens = inner, meter, 0

    def __iter__(self):
        return self

    def __next__(self):
        samples = next(self.inner)
        self.last_tokens = sum(len(s) for s in samples)
        self.meter.add(self.last_tokens)
        return samples

    def get_state(self):
        return self.inner.get_state()

    def set_state(self, state):
        self.inner.set_state(state)

    def close(self) -> None:
        close_batch_iterator(self.inner)


def close_batch_iterator(iterator, grace_s: float = 2.0) -> None:
    """Closes a batch iterator and its Grain worker processes within about grace_s per worker. Grain joins each
    worker for up to 25 s before killing it, and a worker whose queue feeder still holds items never exits by
    itself, so 14 workers held a finished GPU run for minutes. The workers only generate items (the data state is
    in the checkpoint): a short join, then Grain's own kill. (Killing them before Grain's close instead leaves a
    half-written message in the queue, which the close then waits on forever.)"""
    close = getattr(iterator, "close", None)
    if close is None:
        return
    try:
        from grain._src.python.dataset.transformations import process_prefetch
    except ImportError:    # another Grain layout: its own close, with its own timeouts
        close()
        return
    saved = getattr(process_prefetch, "_PROCESS_KILL_TIMEOUT_S", None)
    process_prefetch._PROCESS_KILL_TIMEOUT_S = grace_s
    try:
        close()
    finally:
        if saved is None:
            del process_prefetch._PROCESS_KILL_TIMEOUT_S
        else:
            process_prefetch._PROCESS_KILL_TIMEOUT_S = saved


def batch_iterator(stream: CurriculumStream, cfg):
    """Grain iterator over lists of `batch_size` TrainSamples in stream order (get_state / set_state resume it);
    with `data_workers` > 0 the items are made in that many worker processes, in the same order."""
    import grain

    from gui_jax.data.pipeline import list_batch, make_pipeline
    pipeline = make_pipeline(stream, seed=None, batch_size=cfg.batch_size, shard_index=0, shard_count=1,
                             batch_fn=list_batch, num_threads=cfg.data_threads, drop_remainder=True)
    workers = int(cfg.get("data_workers", 0))
    if workers > 0:  # generation + tokenisation in processes: an accelerator outruns one Python thread
        from absl import flags
        if not flags.FLAGS.is_parsed():  # Grain's workers read absl flags; outside an absl app none were parsed
            flags.FLAGS.mark_as_parsed()
        pipeline = pipeline.mp_prefetch(grain.MultiprocessingOptions(num_workers=workers))
    return iter(pipeline)


def circuit_eval(agent, prompt_cfg: PromptConfig, difficulty, layout: dict, n_items: int, seed: int):
    """A HopFind (train/pointer_find.py) over n_items held-out tap and n_items read items of the last stage's
    screens (the reading eval's label pool and seed), or None when n_items is 0 or no hop is supervised."""
    if n_items <= 0 or not layout:
        return None
    from gui_jax.train.pointer_find import HopFind
    objectives = ("tap", "read") if "read_match" in layout else ("tap",)
    pairs = [(encode_item(agent.policy, it).sample, o) for o in objectives
             for it in reading_eval_items(n_items, (difficulty.min_lines, difficulty.max_lines),
                                          difficulty.shared_word_prob, seed=seed + 7919, prompt_cfg=prompt_cfg,
                                          objectives=(o,))]
    return HopFind(agent, pairs, layout)


def digit_ids(tokenizer) -> tuple[int, ...]:
    """The token ids of "0".."9" (index digits are single tokens in the agent's UI text)."""
    ids = [tokenizer.encode(str(d)) for d in range(10)]
    if any(len(i) != 1 for i in ids):
        raise ValueError(f"index readout needs each digit to be one token; the tokenizer gives {ids}")
    return tuple(int(i[0]) for i in ids)


def pointer_layout(cfg, model_config) -> dict:
    """{hop: (layer, head)} of `cfg.pointer_layout` for this model; {} when pointer_weight is 0."""
    if not float(cfg.get("pointer_weight", 0.0)) > 0:
        return {}
    text = model_config.text
    return parse_layout(cfg.pointer_layout, text.num_hidden_layers, text.num_attention_heads)


def train_pretrain(agent, cfg, prompt_cfg: PromptConfig, *, workdir: str, logger=None, seed: int = 0,
                   log: Callable[[str], None] = print, on_eval: Optional[Callable[[dict], None]] = None) -> dict:
    """Trains agent.params in place (resuming from <workdir>/checkpoints); cfg: the `pretrain` config block.

    Every `eval_every` updates: reading accuracy on the held-out label pool and tokens/s, to the logger
    (metrics.jsonl, TensorBoard), one log line and on_eval({"step", "tokens_per_s", "stage", reading…}).
    Returns {"steps", "tokens_per_s", "reading": last eval, "reading_n": items per objective}."""
    from gui_jax.train.fit import fit
    from gui_jax.train.state import Updater, make_optimizer
    from gui_jax.train.sft import sft_loss_fn

    stages = curriculum_of(cfg)
    # a snapshot ships in bf16; AdamW keeps float32 master weights (compute is float32 either way)
    agent.set_params(jax.tree.map(lambda x: x.astype(jnp.float32) if x.dtype == jnp.bfloat16 else x, agent.params))
    first_step = int(cfg.get("first_step", 0))
    layout = pointer_layout(cfg, agent.model_config)
    stream = CurriculumStream(agent, prompt_cfg, stages, parse_mix(cfg.mix), batch_size=cfg.batch_size, seed=seed,
                              first_step=first_step, goals_per_screen=int(cfg.get("goals_per_screen", 1)),
                              pointers=float(cfg.get("pointer_weight", 0.0)) > 0,
                              read_pointers="read_match" in layout,
                              app_pages=float(cfg.get("app_pages", 0.0)),
                              hops=tuple(layout), toggle_pointers=bool(cfg.get("toggle_pointers", False)),
                              launch_goals=str(cfg.get("launch_goals", "topics")),
                              page_answers=bool(cfg.get("page_answers", False)),
                              token_values=float(cfg.get("token_values", 0.0)),
                              part_answers=bool(cfg.get("part_answers", False)),
                              history=float(cfg.get("history", 0.0)),
                              history_alone=bool(cfg.get("history_alone", False)),
                              decision_weight=float(cfg.get("decision_weight", 1.0)),
                              action_weight=float(cfg.get("action_weight", 1.0)),
                              relabel=float(cfg.get("relabel", 0.0)),
                              read_imperative=float(cfg.get("read_imperative", 0.0)))
    # held-out reading on the last stage's screens (the target) and, while the curriculum is before it, on the
    # first stage's (where progress shows first); metric names reading_acc* and first_stage/reading_acc*
    evals = {"": stages[-1].difficulty, "first_stage/": stages[0].difficulty}
    evals = {k: ReadingEval(agent, prompt_cfg, n_items=cfg.eval_items, lines_range=(d.min_lines, d.max_lines),
                            shared_word_prob=d.shared_word_prob, seed=seed)
             for k, d in evals.items() if k == "" or len(stages) > 1}
    circuit = circuit_eval(agent, prompt_cfg, stages[-1].difficulty, layout, int(cfg.get("circuit_items", 0)), seed)
    meter = Throughput()
    data_iter = _CountingIterator(batch_iterator(stream, cfg), meter)
    optimizer = make_optimizer(cfg.learning_rate, warmup_steps=cfg.warmup_steps, weight_decay=cfg.weight_decay,
                               max_grad_norm=cfg.max_grad_norm, schedule=cfg.schedule,
                               # the optimizer counts this run's updates, which start at first_step
                               total_steps=cfg.num_steps - first_step, decay_steps=int(cfg.get("decay_steps", 0)))
    readout_weight = float(cfg.get("index_readout_weight", 0.0)) if layout else 0.0
    updater = Updater(sft_loss_fn(agent.graphdef, agent.rest, float(cfg.prompt_loss_weight),
                                  int(cfg.prompt_loss_chunk), float(cfg.get("pointer_weight", 0.0)), layout,
                                  readout_weight, digit_ids(stream.encoder.tokenizer) if readout_weight else (),
                                  float(cfg.get("answer_weight", 0.0)) if layout else 0.0,
                                  str(cfg.get("readout_scale", "own")),
                                  float(cfg.get("value_readout_weight", 0.0)) if "read_match" in layout else 0.0),
                      optimizer,
                      compute_dtype=getattr(agent, "compute_dtype", None), rules=getattr(agent, "rules", None))
    result = {"reading": {}, "tokens_per_s": None,
              "reading_n": {prefix + name: n for prefix, ev in evals.items() for name, n in ev.counts.items()}}

    last_metrics: dict = {}

    def after_step(state, metrics: dict, final: bool = False) -> None:
        step = state.step
        last_metrics.update(metrics)
        if logger is not None and not final:
            logger.write(step, {"batch_tokens": data_iter.last_tokens}, prefix="pretrain")
        if step % cfg.eval_every and step != cfg.num_steps and not final:
            return
        result["eval_step"] = step
        rate = meter.rate()
        reading = {prefix + k: v for prefix, ev in evals.items() for k, v in ev(state.params).items()}
        meter.rate()                      # restart the meter: evaluation time is not training throughput
        stage = stream.stage_of(step - 1)
        point = {"tokens_per_s": rate, "stage": stage, **reading}
        if circuit is not None:   # each hop's argmax-in-range rate: which part of the look-up lags
            rates = {f"circuit/{hop}": r["rate"] for hop, r in circuit(state.params).items()}
            point.update(rates)
            meter.rate()
        if logger is not None:
            logger.write(step, point, prefix="pretrain")
        result["reading"], result["tokens_per_s"] = reading, rate
        if on_eval is not None:
            on_eval({"step": step, **point})
        log(f"pretrain step {step}: loss {float(metrics['loss']):.4f} token_acc {float(metrics['token_acc']):.3f} "
            f"stage {stage + 1}/{len(stages)} {rate:.0f} tokens/s "
            + " ".join(f"{k} {v:.3f}" for k, v in reading.items())
            + "".join(f" {k} {v:.3f}" for k, v in point.items() if k.startswith("circuit/") and k.endswith(":first")))

    try:
        state = fit(agent, updater, data_iter, num_steps=cfg.num_steps, workdir=workdir, logger=logger,
                    prefix="pretrain", micro_batch_size=cfg.micro_batch_size, seed=seed,
                    checkpoint_every=cfg.checkpoint_every, checkpoint_seconds=60.0 * cfg.checkpoint_minutes,
                    stop_after_steps=cfg.get("stop_after_steps"), after_step=after_step,
                    packing=bool(cfg.packing), row_length=cfg.row_length or None, first_step=first_step,
                    end_after_seconds=60.0 * float(cfg.get("max_minutes", 0.0)))
    finally:  # also on SIGTERM / a stop: Grain's own close would hold the process for 25 s per worker
        data_iter.close()
    if last_metrics and result.get("eval_step") != state.step:   # ended on time between two evaluations
        after_step(state, last_metrics, final=True)
    agent.set_params(state.params)
    return {"steps": state.step, **result}
