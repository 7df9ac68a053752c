"""Job `base_eval`: what a (pretrained) base model can read, scored by greedy generation, with Wilson intervals.

    python -m gui_jax.main --config configs/base_eval.py --config.model.checkpoint=builtin:tiny-base

Two parts, each a list of (prompt, right answer) items the agent answers greedily (temperature 0, batched
through `agent.policy.generate`, `model.max_new_tokens` new tokens):
  reading    `base_eval.n` items per objective in `base_eval.objectives` from `reading_eval_items` (labels
             from `base_eval.label_pool`: `reading_eval`, never pretrained on, or `train`: the gap is memorised
             words) on screens of `base_eval.lines_range` lines, `base_eval.shared_word_prob` distractors, on
             PhoneSim's app pages with probability `base_eval.app_pages`; `score` decides.
  phonesim   every expert click on an element in the held-out (test) episodes of the data block (the
             quickstart's templates, split and test seeds), prompted as the quickstart agent is (goal + this
             screen, no history, `config.prompt`); a hit when the response clicks the expert's element.
             Row phonesim_open: every held-out episode's first step when it opens an app from the home
             screen (goal -> app); a hit when the response opens that app. The clicks' "named" subset
             (`names_element`: a task slot in the goal and in the clicked label) leaves out navigation
             clicks the goal does not name ("About phone" for the model number); it has a row and a pairing.
             Row phonesim_answer: every expert answer step (the value the goal asks for, on the screen
             the agent reads it from); a hit when the response answers it (`normalize_answer` equal).
             Row phonesim_stop (`base_eval.stops`): every step after the first, prompted with the expert's
             earlier steps ("Earlier steps:", as the quickstart agent sees them); a hit when the response
             stops (terminate) exactly where the expert does, with the stopping and the going-on steps as subsets.
Items with a target element (tap, home, toggle) also report where the misses went (`breakdown`: a row whose
label shares a word with the target's, another row, an index the screen does not show, another action, unparsable)
and the hits by the target's quarter of the screen; read items likewise (another line's whole text: the look-up
failed; part of the value: the copy failed; other text, another action, unparsable), by the value's quarter,
and token by token (the first token: the look-up; each later one: the copy; base_eval_misses.copy_profile).
Teacher-forced exact match (the pretrain job's metric) is a lower bound on this. Weights: `eval.checkpoint_dir`
(Orbax), else `model.checkpoint` (Hugging Face folder, `builtin:<name>`); neither: refused unless `eval.untrained`.
`base_eval.pointer_layout` (the base's hop=layer.head layout) also scores the look-up circuit hop by hop on
the first `attention_items` tap and read items (train/pointer_find.py): where a miss comes from.
Each part keeps its per-item hits and a digest of its items; `base_eval.compare_to` (an earlier results.json
or its folder, same settings) adds a paired comparison per part: items lost and gained, exact McNemar p.
Writes <workdir>/results.json, base_eval.md (printed) and responses.jsonl (each item's hit and responses).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import time
from typing import Optional, Sequence

from gui_jax.config_check import RunError
from gui_jax.jobs import common
from gui_jax.jobs.base_eval_misses import (TAP_BUCKETS, answer_text, answers_value, breakdown, bucket_name,
                                           clicks_element, copy_profile, opens_app, parsed_action)

PHONESIM = "phonesim_click"   # the PhoneSim part's row name in results.json and the table
PHONESIM_OPEN = "phonesim_open"   # its first steps that open an app (goal -> app on the home screen)
PHONESIM_ANSWER = "phonesim_answer"   # its answer steps (the value the goal asks for, read off the screen)
PHONESIM_STOP = "phonesim_stop"   # its later steps with history: stop (terminate) exactly where the expert does
# kind -> (row name, what its items are, whether a parsed response hits an item)
PHONESIM_PARTS = {"click": (PHONESIM, "clicks", lambda a, it: clicks_element(a, it["element"])),
                  "open": (PHONESIM_OPEN, "first steps (open an app)", lambda a, it: opens_app(a, it["app"])),
                  "answer": (PHONESIM_ANSWER, "answers", lambda a, it: answers_value(a, it["answer"])),
                  "stop": (PHONESIM_STOP, "later steps (stop or go on, expert history)",
                           lambda a, it: a is not None and (a.type == "terminate") == it["stop"])}
# a part's item subsets with a row and a pairing of their own: key -> (row label, what the subset leaves out)
SUBSETS = {"named": ("the goal names the element", "clicks on an element the goal does not name left out"),
           "stops": ("the expert stops", "steps where the expert goes on left out"),
           "goes_on": ("the expert goes on", "steps where the expert stops left out")}


# ------------------------------------------------------------------------------------------ settings

def settings(config) -> dict:
    """The validated `base_eval` block (one-line RunError for a bad field, before any model is built)."""
    from gui_jax.train.pretrain_data import OBJECTIVES, POOLS
    from gui_jax.train.pretrain_screens import MAX_LINES, MIN_LINES
    b = config.base_eval
    n, objectives = b.n, tuple(b.objectives)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise RunError(f"config.base_eval.n = {n!r}: expected items per objective, an int ≥ 1")
    bad = [o for o in objectives if o not in OBJECTIVES]
    if bad or len(set(objectives)) != len(objectives):
        raise RunError(f"config.base_eval.objectives = {objectives!r}: expected distinct names of "
                       f"{', '.join(OBJECTIVES)} (() = PhoneSim only); on the command line a tuple: "
                       "--config.base_eval.objectives=\"('tap','read')\"")
    lines = tuple(b.lines_range)
    if (len(lines) != 2 or not all(isinstance(v, int) for v in lines)
            or not MIN_LINES <= lines[0] <= lines[1] <= MAX_LINES):
        raise RunError(f"config.base_eval.lines_range = {lines!r}: expected (min, max) UI lines with "
                       f"{MIN_LINES} ≤ min ≤ max ≤ {MAX_LINES}")
    p, app_pages = (_probability(name, b.get(name, 0.0)) for name in ("shared_word_prob", "app_pages"))
    if not objectives and not b.phonesim:
        raise RunError("config.base_eval: no objectives and phonesim=False leave nothing to score")
    if config.eval.get("checkpoint_dir") and config.eval.get("untrained", False):
        raise RunError(f"config.eval.untrained = True: contradicts eval.checkpoint_dir "
                       f"{config.eval.checkpoint_dir!r}; set one of them")
    attention_items = b.get("attention_items", 0)
    if not isinstance(attention_items, int) or isinstance(attention_items, bool) or attention_items < 0:
        raise RunError(f"config.base_eval.attention_items = {attention_items!r}: expected an int ≥ 0 (items per "
                       "objective, at most n)")
    layout = str(b.get("pointer_layout", ""))
    if layout and not (set(objectives) & {"tap", "read"}):
        raise RunError(f"config.base_eval.pointer_layout is set but objectives {objectives!r} have no tap or read "
                       "items to point at")
    if (pool := b.get("label_pool", "reading_eval")) not in POOLS:
        raise RunError(f"config.base_eval.label_pool = {pool!r}: expected one of {', '.join(POOLS)}")
    if b.get("stops", False) and not b.phonesim:
        raise RunError("config.base_eval.stops = True scores PhoneSim's held-out steps: it needs phonesim=True")
    return {"n": n, "objectives": objectives, "lines_range": lines, "shared_word_prob": p, "app_pages": app_pages,
            "seed": int(b.seed), "phonesim": bool(b.phonesim), "stops": bool(b.get("stops", False)),
            "compare_to": str(b.get("compare_to", "")), "label_pool": pool,
            "pointer_layout": layout, "attention_items": min(attention_items, n)}


def _probability(name: str, value) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value <= 1.0:
        raise RunError(f"config.base_eval.{name} = {value!r}: expected a probability in [0, 1]")
    return float(value)


def reading_prompt_config(pcfg, lines_range):
    """config.prompt with room for the widest reading screen: the pretrained base saw 40-line screens, and a
    cut screen would hide targets (PretrainSource refuses one)."""
    return dataclasses.replace(pcfg, max_ui_lines=max(pcfg.max_ui_lines, int(lines_range[1])))


def reading_items(s: dict, pcfg) -> dict[str, list[dict]]:
    """objective -> its n items: one source per objective, so each gets exactly n (a mixed source draws
    objectives at random)."""
    from gui_jax.train.pretrain_data import reading_eval_items
    try:
        return {o: reading_eval_items(s["n"], s["lines_range"], s["shared_word_prob"], seed=s["seed"],
                                      prompt_cfg=reading_prompt_config(pcfg, s["lines_range"]), objectives=(o,),
                                      app_pages=s["app_pages"], pool=s["label_pool"])
                for o in s["objectives"]}
    except ValueError as e:   # a prompt block the synthetic screens cannot be written in (dialect, observation)
        raise RunError(f"base_eval reading items: {e}") from None


# ------------------------------------------------------------------------------------------ PhoneSim items

def names_element(goal: str, label: str, params) -> bool:
    """Whether the goal names the element: one of the task's parameter values (its instance's slots: a song
    title, a person, an alarm's time) is in the goal and in the element's label (case-blind). "Turn off the 15:15
    alarm." names the row "15:15 Gym ON"; "What is the model number of this phone?" does not name "About phone"."""
    goal, label = goal.lower(), label.lower()
    values = (str(v).strip().lower() for _, v in params)
    return any(v and v in goal and v in label for v in values)


def _step_item(ep, t: int, pcfg, prompt, target: str, n_lines: int, **fields) -> dict:
    """The fields every PhoneSim item has (prompt, expert response, where it comes from), plus the part's own."""
    return {"prompt": prompt, **fields, "target": target, "template": ep.template, "episode_id": ep.episode_id,
            "step": t, "n_lines": n_lines, "dialect": pcfg.dialect}


def phonesim_items(episodes, pcfg, tasks=()) -> list[dict]:
    """One item per expert click on an element: the prompt the quickstart agent sees at that step without
    history, the expert's element and response, whether the prompt shows that element at all, and whether the
    goal names it (`names_element`, from the episode's task among `tasks`, matched by task id)."""
    from gui_jax.rl.prompting import build_messages, element_label_text, expert_response, shown_elements
    from gui_jax.rl.semi_online_rollout import expert_element
    params = {t.task_id: t.params for t in tasks}
    items = []
    for ep in episodes:
        for t, action in enumerate(ep.actions):
            element = expert_element(ep, t) if action.type == "click" else None
            if element is None:
                continue
            obs = ep.observations[t]
            shown = {e.index: element_label_text(e, pcfg) for e in shown_elements(obs, pcfg)}
            items.append(_step_item(ep, t, pcfg, build_messages(ep.goal, [], obs, pcfg),
                                    expert_response(action, obs, pcfg, element=element), len(shown),
                                    element=int(element), shown=int(element) in shown,
                                    named=names_element(ep.goal, shown.get(int(element), ""),
                                                        params.get(ep.episode_id, ()))))
    return items


def phonesim_open_items(episodes, pcfg) -> list[dict]:
    """One item per held-out episode whose first expert step opens an app (goal -> app, on the home screen):
    the prompt the quickstart agent sees there, the app and the expert's response."""
    from gui_jax.rl.prompting import build_messages, expert_response, shown_elements
    items = []
    for ep in episodes:
        if not ep.actions or ep.actions[0].type != "open":
            continue
        action, obs = ep.actions[0], ep.observations[0]
        items.append(_step_item(ep, 0, pcfg, build_messages(ep.goal, [], obs, pcfg), expert_response(action, obs, pcfg),
                                len(shown_elements(obs, pcfg)), app=str(action.text), shown=True))
    return items


def phonesim_answer_items(episodes, pcfg) -> list[dict]:
    """One item per expert answer step of the held-out episodes: the prompt the quickstart agent sees there
    (no history), the answer and the expert's response."""
    from gui_jax.rl.prompting import build_messages, expert_response, shown_elements
    items = []
    for ep in episodes:
        for t, action in enumerate(ep.actions):
            if action.type != "answer" or not action.text:
                continue
            obs = ep.observations[t]
            items.append(_step_item(ep, t, pcfg, build_messages(ep.goal, [], obs, pcfg),
                                    expert_response(action, obs, pcfg), len(shown_elements(obs, pcfg)),
                                    answer=str(action.text), shown=True))
    return items


def phonesim_stop_items(episodes, pcfg) -> list[dict]:
    """One item per expert step after the first of the held-out episodes, prompted with the expert's earlier
    steps as the quickstart agent sees them: whether the expert stops there (terminate) and its response."""
    from gui_jax.rl.prompting import build_messages, expert_response, shown_elements
    from gui_jax.rl.semi_online_rollout import expert_element
    from gui_jax.train.sft import expert_history
    items = []
    for ep in episodes:
        for t in range(1, len(ep.actions)):
            obs = ep.observations[t]
            items.append(_step_item(ep, t, pcfg, build_messages(ep.goal, expert_history(ep, t, pcfg), obs, pcfg),
                                    expert_response(ep.actions[t], obs, pcfg, element=expert_element(ep, t)),
                                    len(shown_elements(obs, pcfg)), stop=ep.actions[t].type == "terminate",
                                    shown=True))
    return items


# ------------------------------------------------------------------------------------------ scoring

def too_long(policy, targets: Sequence[str], max_new_tokens: int, label: str) -> Optional[int]:
    """How many expert responses (+ the end token) need more than max_new_tokens tokens: a model that writes
    them is cut off and scored wrong. Warned about; None when the policy has no tokenizer (a stub)."""
    tok = getattr(policy, "tokenizer", None)
    if tok is None:
        return None
    cut = sum(len(tok.encode(t)) + 1 > max_new_tokens for t in targets)
    if cut:
        print(f"warning: {label}: {cut} of {len(targets)} expert responses are longer than model.max_new_tokens "
              f"= {max_new_tokens}: raise it, or those items cannot be answered in full")
    return cut


def generate_texts(policy, prompts: Sequence, *, max_new_tokens: int, seed: int, label: str) -> list[str]:
    """Greedy responses, in chunks of the policy's batch size so a long part shows progress."""
    step = max(int(getattr(policy, "batch_size", 64)), 1)
    out: list[str] = []
    t0 = time.time()
    for start in range(0, len(prompts), step):
        gens = policy.generate(list(prompts[start:start + step]), temperature=0.0, seed=seed,
                               max_new_tokens=max_new_tokens)
        out += [g.text for g in gens]
        print(f"  {label}: {len(out)}/{len(prompts)} generated ({time.time() - t0:.0f} s)", flush=True)
    return out


_SPACED_ANSWER = re.compile(r'("text":\s*") ')


def items_digest(prompts: Sequence, targets: Sequence[str]) -> str:
    """A fingerprint of a part's items (prompts and expert responses, in order): two results with the same digest
    scored the same items, so their per-item hits pair up. An answer's leading space (prompt.answer_spaced) is
    left out: a spaced and a plain base answer the same items."""
    blob = json.dumps([[p, _SPACED_ANSWER.sub(r"\1", t)] for p, t in zip(prompts, targets)], sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def summary(hits: Sequence[bool], **extra) -> dict:
    """n, successes, accuracy, Wilson interval and `hits` (one "1"/"0" per item, in item order: what a paired test
    against another model's results needs)."""
    from gui_jax.eval.metrics import wilson_interval
    n, k = len(hits), int(sum(bool(h) for h in hits))
    lo, hi = wilson_interval(k, n)
    return {"n": n, "successes": k, "accuracy": k / n if n else float("nan"), "wilson95": [lo, hi],
            "hits": "".join("1" if h else "0" for h in hits), **extra}


def check_pairable(digests: dict[str, str], earlier: dict, path: str) -> None:
    """RunError naming the first part (of {part: items_digest}) that the earlier results lack, kept no per-item
    hits for, or scored on other items."""
    for name, digest in digests.items():
        old = earlier.get("objectives", {}).get(name)
        if old is None or "hits" not in old:
            raise RunError(f"base_eval.compare_to {path!r}: it has no per-item hits for {name!r} (results written "
                           "before base_eval kept them, or without that part): rerun it or drop compare_to")
        if old.get("items") != digest:
            raise RunError(f"base_eval.compare_to {path!r}: its {name!r} items differ from these (another n, "
                           "seed, lines_range, shared_word_prob, prompt or data split): pair only equal settings")


def paired_against(results: dict, earlier: dict) -> dict:
    """{part: {"before", "after", "lost", "gained", "p"}}: each part of `results` against the same part of the
    earlier results (same items: check_pairable), item by item (exact McNemar); PhoneSim's named clicks as
    "<part>: named", on the items its mask keeps."""
    from gui_jax.eval.metrics import mcnemar_exact, paired_counts

    def pair(old: dict, new: dict, keep: str) -> dict:
        before = [h == "1" for h, k in zip(old["hits"], keep) if k == "1"]
        after = [h == "1" for h, k in zip(new["hits"], keep) if k == "1"]
        lost, gained = paired_counts(before, after)
        return {"lost": lost, "gained": gained, "p": mcnemar_exact(before, after)}

    out = {}
    for name, r in results["objectives"].items():
        old = earlier["objectives"][name]
        out[name] = {"before": old["accuracy"], "after": r["accuracy"], **pair(old, r, "1" * len(r["hits"]))}
        for key in SUBSETS:
            if key in r and key in old:   # same items, so the same mask
                out[f"{name}: {key}"] = {"before": old[key]["accuracy"], "after": r[key]["accuracy"],
                                         **pair(old, r, r[key]["mask"])}
    return out


def load_compare_to(path: str) -> dict:
    """The earlier results.json named by base_eval.compare_to (the file or its folder); one-line error if absent."""
    file = os.path.join(path, "results.json") if os.path.isdir(path) else path
    try:
        with open(file) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise RunError(f"base_eval.compare_to {path!r}: cannot read a results.json there ({e})") from None


def response_rows(objective: str, items: Sequence[dict], texts: Sequence[str], hits: Sequence[bool]) -> list[dict]:
    """responses.jsonl's lines for one part: item index, hit, the expert's and the model's response, and the
    item's template / episode / step where it has them."""
    keep = ("template", "episode_id", "step")
    return [{"objective": objective, "item": i, "hit": bool(h), **{k: it[k] for k in keep if k in it},
             "target": it["target"], "response": text} for i, (it, text, h) in enumerate(zip(items, texts, hits))]


def score_reading(policy, items: dict[str, list[dict]], s: dict, *, max_new_tokens: int, seed: int,
                  responses: Optional[list] = None) -> dict:
    """One summary per objective; each item's response row is appended to `responses` when given."""
    from gui_jax.train.pretrain_data import score
    out = {}
    for obj, its in items.items():
        cut = too_long(policy, [it["target"] for it in its], max_new_tokens, obj)   # warned before the wait
        texts = generate_texts(policy, [(it["messages"], []) for it in its], max_new_tokens=max_new_tokens,
                               seed=seed, label=obj)
        bad = [parsed_action(text, it["dialect"]) is None for it, text in zip(its, texts)]
        hits = [score(it, text) for it, text in zip(its, texts)]
        if responses is not None:
            responses += response_rows(obj, its, texts, hits)
        out[obj] = summary(hits, part="reading", malformed=sum(bad),
                           items=items_digest([it["messages"] for it in its], [it["target"] for it in its]),
                           pool=s["label_pool"], lines_range=list(s["lines_range"]),
                           screen_lines=[min(it["n_lines"] for it in its), max(it["n_lines"] for it in its)],
                           shared_word_prob=s["shared_word_prob"], app_pages=s["app_pages"],
                           examples=texts[:3], targets_over_max_new_tokens=cut)
        tok = getattr(policy, "tokenizer", None)
        if all(it["target_element"] is not None for it in its):   # tap, home, toggle: where the misses go
            out[obj]["taps"] = breakdown(its, texts, kind="tap", encode=tok.encode if tok is not None else None)
        elif all(it["answer"] is not None and it.get("value_element") is not None for it in its):   # read
            out[obj]["reads"] = breakdown(its, texts, kind="read")
            if tok is not None:   # the look-up's first token against the copy after it, in the expert's form
                out[obj]["reads"]["copy"] = copy_profile(   # (prompt.answer_spaced: " Sep 8")
                    [answer_text(it, it["target"]) for it in its], [answer_text(it, t) for it, t in zip(its, texts)],
                    hits, tok.encode)
    return out


def score_phonesim(policy, items: list[dict], *, max_new_tokens: int, seed: int, templates: Sequence[str],
                   episodes: int, kind: str = "click", responses: Optional[list] = None) -> dict:
    """kind 'click': items of phonesim_items, a hit clicks the expert's element; 'open': items of
    phonesim_open_items, a hit opens the expert's app; 'answer': items of phonesim_answer_items, a hit answers the
    expert's value. Each item's response row goes to `responses` when given."""
    label, _, hit = PHONESIM_PARTS[kind]
    cut = too_long(policy, [it["target"] for it in items], max_new_tokens, label)
    texts = generate_texts(policy, [it["prompt"] for it in items], max_new_tokens=max_new_tokens, seed=seed,
                           label=label)
    actions = [parsed_action(text, it["dialect"]) for it, text in zip(items, texts)]
    hits = [hit(a, it) for it, a in zip(items, actions)]
    bad = [a is None for a in actions]
    if responses is not None:
        responses += response_rows(label, items, texts, hits)
    per_template = {}
    for it, h, b in zip(items, hits, bad):
        row = per_template.setdefault(it["template"], {"n": 0, "successes": 0, "malformed": 0})
        row["n"], row["successes"], row["malformed"] = row["n"] + 1, row["successes"] + int(h), row["malformed"] + b
    lines = [it["n_lines"] for it in items] or [0]
    masks = {}
    if kind == "click":   # the measure: clicks on an element the goal names (not a navigation step)
        masks["named"] = [it["named"] for it in items]
    if kind == "stop":
        masks["stops"], masks["goes_on"] = [it["stop"] for it in items], [not it["stop"] for it in items]
    extra = {}
    for key, mask in masks.items():
        extra[key] = {k: v for k, v in summary([h for h, m in zip(hits, mask) if m]).items() if k != "hits"}
        extra[key]["mask"] = "".join("1" if m else "0" for m in mask)
    return summary(hits, part="phonesim", kind=kind, malformed=sum(bad), templates=list(templates), **extra,
                   items=items_digest([it["prompt"] for it in items], [it["target"] for it in items]),
                   episodes=episodes,
                   episodes_with_clicks=len({it["episode_id"] for it in items}),
                   screen_lines=[min(lines), max(lines)], targets_not_shown=sum(not it["shown"] for it in items),
                   per_template=per_template, examples=texts[:3], targets_over_max_new_tokens=cut)


def attention_layout(agent, spec: str) -> dict:
    """{hop: (layer, head)} of base_eval.pointer_layout on the loaded model; a RunError naming the field."""
    from gui_jax.train.attention_pointers import parse_layout
    text = agent.model_config.text
    try:
        return parse_layout(spec, text.num_hidden_layers, text.num_attention_heads)
    except ValueError as e:
        raise RunError(f"config.base_eval.pointer_layout: {e}") from None


def score_attention(agent, reading: dict[str, list[dict]], s: dict, layout: dict) -> dict:
    """The look-up circuit hop by hop (train/pointer_find.py) on the first `attention_items` tap and read items:
    {"layout", "items": {objective: n}, "hops": {hop: {"rows", "found", "rate"}}}."""
    from gui_jax.train.pointer_find import hop_find_rates
    from gui_jax.train.pretrain_data import encode_item
    chosen = {o: its[:s["attention_items"]] for o, its in reading.items() if o in ("tap", "read")}
    pairs = [(encode_item(agent.policy, it).sample, o) for o, its in chosen.items() for it in its]
    print(f"  attention: {len(pairs)} items, hops {', '.join(layout)}", flush=True)
    return {"layout": s["pointer_layout"], "items": {o: len(its) for o, its in chosen.items()},
            "hops": hop_find_rates(agent, pairs, layout)}


# ------------------------------------------------------------------------------------------ the model

def resolved_checkpoint(config) -> str:
    """model.checkpoint with `builtin:<name>` resolved and checked: a missing or damaged built-in is a
    one-line error before episodes are generated or a model is built."""
    from gui_jax.models.builtin import resolve_checkpoint
    spec = config.model.get("checkpoint", "")
    try:
        return resolve_checkpoint(spec) if spec else ""
    except ValueError as e:
        raise RunError(str(e)) from None


def load_agent(config, test_tasks) -> tuple[object, dict]:
    """(agent, what it scores): eval.checkpoint_dir's params, else model.checkpoint, else (asked for) random."""
    from gui_jax.rl.agent import Agent
    ckpt_dir, hf_dir = config.eval.get("checkpoint_dir", ""), config.model.get("checkpoint", "")
    resolved = resolved_checkpoint(config)
    agent = Agent(config, seed=config.seed)
    if ckpt_dir:
        params, step = common.load_stage_params(ckpt_dir)
        common.set_agent_params(agent, params, ckpt_dir)
        source = {"kind": "orbax", "path": os.path.abspath(ckpt_dir), "step": int(step)}
        if test_tasks:
            source["held_out_vs_checkpoint"] = common.report_checkpoint_overlap(ckpt_dir, test_tasks,
                                                                                "the checkpoint")
    elif hf_dir:
        source = {"kind": "huggingface", "path": os.path.abspath(resolved), "spec": hf_dir, "step": None}
    else:
        source = {"kind": "untrained", "path": None, "step": None, "preset": config.model.preset,
                  "seed": int(config.seed)}
    return agent, source


def model_line(source: dict) -> str:
    if source["kind"] == "orbax":
        return f"Orbax checkpoint {source['path']} step {source['step']}"
    if source["kind"] == "huggingface":
        spec = source.get("spec")
        return f"Hugging Face {spec}" + (f" ({source['path']})" if spec != source["path"] else "")
    return f"UNTRAINED {source['preset']} model (seed {source['seed']})"


# ------------------------------------------------------------------------------------------ report

def copy_line(c: dict) -> str:
    """One line of a read part's copy_profile."""
    rate = lambda rt: f"{rt[0] / rt[1]:.3f} ({rt[0]}/{rt[1]})" if rt[1] else "- (0/0)"
    lengths = ", ".join(f"{k + 1}{'+' if k + 1 == len(c['by_value_tokens']) else ''}: {h}/{n}"
                        for k, (h, n) in enumerate(c["by_value_tokens"]) if n)
    return (f"token by token (the expert's answer text encoded alone): first token {rate(c['first_token'])}, "
            f"each later token {rate(c['continuation'])}, the end {rate(c['end'])}; first wrong token of the misses "
            + ", ".join(f"{k} {v}" for k, v in c["first_wrong"].items()) + f"; right by the value's tokens {lengths}")


def format_table(results: dict) -> str:
    """The markdown report: model line, then objective | accuracy | successes/n | malformed (responses the
    dialect cannot parse) | 95 % Wilson | screens, PhoneSim's templates each on a row of their own."""
    rows = []
    for name, r in results["objectives"].items():
        lo, hi = r["wilson95"]
        if r["part"] == "reading":
            a, b = r["lines_range"]
            pages = f", app pages p {r['app_pages']:g}" if r.get("app_pages") else ""
            pool = r.get("pool", "reading_eval")
            screens = f"{a}-{b} lines, shared-word p {r['shared_word_prob']:g}{pages} ({pool} labels)"
        else:
            a, b = r["screen_lines"]
            lines = a if a == b else f"{a}-{b}"
            what = PHONESIM_PARTS[r.get("kind", "click")][1]
            screens = (f"PhoneSim held-out, {len(r['templates'])} templates, {what} of "
                       f"{r['episodes_with_clicks']} of {r['episodes']} episodes, {lines} lines shown; "
                       f"{r['targets_not_shown']} targets cut from the prompt")
        rows.append(f"| {name} | {r['accuracy']:.3f} | {r['successes']}/{r['n']} | {r['malformed']} | "
                    f"[{lo:.3f}, {hi:.3f}] | {screens} |")
        for key, (label, left_out) in SUBSETS.items():
            if key in r:
                m, (a, b) = r[key], r[key]["wilson95"]
                rows.append(f"| {name}: {label} | {m['accuracy']:.3f} | {m['successes']}/{m['n']} | "
                            f"| [{a:.3f}, {b:.3f}] | {r['n'] - m['n']} {left_out} |")
        for template, t in sorted(r.get("per_template", {}).items()):
            rows.append(f"| {name}: {template} | {t['successes'] / t['n']:.3f} | {t['successes']}/{t['n']} | "
                        f"{t['malformed']} | | |")
    notes = []
    for name, r in results["objectives"].items():
        for key, whose in (("taps", "target's"), ("reads", "value's")):
            if key in r:
                misses = ", ".join(f"{k} {v}" for k, v in r[key]["outcomes"].items() if k != "right" and v)
                quarters = " / ".join(f"{h}/{n}" for h, n in r[key]["by_target_quarter"])
                notes.append(f"{name}: misses {misses or 'none'}; right by the {whose} quarter of the screen "
                             f"(top to bottom) {quarters}")
            for part, (what, buckets) in TAP_BUCKETS.items():
                if part in r.get(key, {}):
                    notes.append(f"{name}: right by {what} " + ", ".join(
                        f"{bucket_name(lo, hi)}: {h}/{n}" for (lo, hi), (h, n) in zip(buckets, r[key][part]) if n))
            if "copy" in r.get(key, {}):
                notes.append(f"{name}: {copy_line(r[key]['copy'])}")
    if "attention" in results:
        a = results["attention"]
        notes.append("attention, teacher-forced on " + ", ".join(f"{n} {o}" for o, n in a["items"].items())
                     + " items (how often each hop's head attends most inside its pointed range; :first = an "
                     "answer's first token, :next_token = the model's argmax there is the copied token): " + ", ".join(
                         f"{hop} {h['rate']:.3f} ({h['found']}/{h['rows']})" for hop, h in a["hops"].items()))
    if "paired" in results:
        notes.append(f"paired against {results['paired']['against']} (the same items; exact McNemar): " + "; ".join(
            f"{name} {p['before']:.3f} -> {p['after']:.3f}, lost {p['lost']}, gained {p['gained']}, p = {p['p']:.2g}"
            for name, p in results["paired"]["parts"].items()))
    return "\n".join([
        f"model: {model_line(results['model'])}; greedy, max_new_tokens {results['max_new_tokens']}",
        "",
        "| objective | accuracy | successes/n | malformed | 95 % Wilson | screens |",
        "|---|---|---|---|---|---|",
        *rows,
        *([""] + notes if notes else []),
    ])


def run(config, workdir: str) -> None:
    from gui_jax.rl.prompting import PromptConfig
    common.require_weights(config, "base_eval")
    s = settings(config)
    resolved_checkpoint(config)
    try:
        pcfg = PromptConfig(**config.prompt.to_dict())
    except (TypeError, ValueError) as e:
        raise RunError(f"config.prompt: {e}") from None
    earlier = load_compare_to(s["compare_to"]) if s["compare_to"] else None   # before any work
    os.makedirs(workdir, exist_ok=True)
    t0 = time.time()
    reading = reading_items(s, pcfg)   # cheap; before the episodes and the model, so a bad setting stops early
    test_tasks, test_eps, clicks, opens, answers, stops = [], [], [], [], [], []
    if s["phonesim"]:
        _, test_tasks, _, test_eps = common.prepare(config, workdir, sides=("test",))
        clicks, opens = phonesim_items(test_eps, pcfg, test_tasks), phonesim_open_items(test_eps, pcfg)
        answers = phonesim_answer_items(test_eps, pcfg)
        stops = phonesim_stop_items(test_eps, pcfg) if s["stops"] else []
        if not (clicks or opens or answers):
            raise RunError("base_eval: the held-out episodes have no expert click, app opening or answer to score "
                           "(data.templates / data.num_test_episodes)")
    if earlier is not None:   # before the model: pairing needs the earlier run's very items
        digests = {o: items_digest([it["messages"] for it in its], [it["target"] for it in its])
                   for o, its in reading.items()}
        for name, its in ((PHONESIM, clicks), (PHONESIM_OPEN, opens), (PHONESIM_ANSWER, answers),
                          (PHONESIM_STOP, stops)):
            if its:
                digests[name] = items_digest([it["prompt"] for it in its], [it["target"] for it in its])
        check_pairable(digests, earlier, s["compare_to"])
    agent, source = load_agent(config, test_tasks)
    print(f"base_eval scoring {model_line(source)}")
    layout = attention_layout(agent, s["pointer_layout"]) if s["pointer_layout"] else None   # before generating
    max_new = int(config.model.get("max_new_tokens", 48))
    responses: list[dict] = []
    objectives = score_reading(agent.policy, reading, s, max_new_tokens=max_new, seed=int(config.seed),
                               responses=responses)
    templates = sorted({t.template for t in test_tasks})
    if clicks:
        objectives[PHONESIM] = score_phonesim(agent.policy, clicks, max_new_tokens=max_new, seed=int(config.seed),
                                              templates=templates, episodes=len(test_eps), responses=responses)
    if opens:   # templates whose episodes start on the home screen
        objectives[PHONESIM_OPEN] = score_phonesim(agent.policy, opens, max_new_tokens=max_new,
                                                   seed=int(config.seed), templates=templates,
                                                   episodes=len(test_eps), kind="open", responses=responses)
    if answers:   # templates that end by answering a question
        objectives[PHONESIM_ANSWER] = score_phonesim(agent.policy, answers, max_new_tokens=max_new,
                                                     seed=int(config.seed), templates=templates,
                                                     episodes=len(test_eps), kind="answer", responses=responses)
    if stops:   # base_eval.stops: the answer-or-stop decision with the expert history
        objectives[PHONESIM_STOP] = score_phonesim(agent.policy, stops, max_new_tokens=max_new,
                                                   seed=int(config.seed), templates=templates,
                                                   episodes=len(test_eps), kind="stop", responses=responses)
    results = {"model": source, "max_new_tokens": max_new, "temperature": 0.0, "settings": s,
               "objectives": objectives, "seconds": time.time() - t0}
    if s["pointer_layout"]:
        results["attention"] = score_attention(agent, reading, s, layout)
    if earlier is not None:
        results["paired"] = {"against": s["compare_to"], "parts": paired_against(results, earlier)}
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(workdir, "responses.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in responses)
    table = format_table(results)
    with open(os.path.join(workdir, "base_eval.md"), "w") as f:
        f.write("# base_eval\n\n" + table + "\n")
    print(table)
    print(f"results in {os.path.join(workdir, 'results.json')}, base_eval.md and responses.jsonl")
