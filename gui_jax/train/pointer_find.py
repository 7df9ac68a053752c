"""Which look-up circuit a model has formed: for each supervised attention hop, how often its head attends most
inside the range a pointer names (teacher-forced on the expert response).

A greedy miss (a wrong row, a garbled value) does not say whether the goal's words failed to reach the answer
position, the match found the wrong line, or the copy wrote the wrong token. Scoring every pointer row of
held-out items by its head's argmax separates them: the tiny base's read items, for example, find the value's
tokens in ~87 % of rows but its first token in ~71 %, while a base trained on taps alone has a goal hop that lands
on the goal's label in a third of the read positions.
"""
from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.rl.batch import build_batch
from gui_jax.train.attention_pointers import HOPS, PiecePointers, head_log_attention_rows, layer_qk


def _found_fn(graphdef, rest, layout: dict[str, tuple[int, int]]):
    """jitted (params, batch with pointers) → (found bool [B, K], next-token right bool [B, K]): whether the
    row's hop head has its argmax inside lo..hi, and whether the model's argmax at the query is the next token
    (the copy a match / read_match row ends in)."""
    from gui_jax.models.qwen2_5_vl.text import mrope_cos_sin

    @jax.jit
    def found(params, batch):
        model = nnx.merge(graphdef, params, rest)
        out = model(batch["input_ids"], attention_mask=batch["attention_mask"], position_ids=batch["position_ids"],
                    compute_logits=False, output_hidden_states=True)
        lm = model.language_model
        cos, sin = mrope_cos_sin(batch["position_ids"], lm.cfg)
        hop, q, lo, hi = (batch["pointers"][..., i] for i in range(4))
        segments = batch["attention_mask"].astype(jnp.int32)
        hit = jnp.zeros(hop.shape, bool)
        qk = {l: layer_qk(lm.layers[l], out.hidden_states[l], cos, sin) for l in sorted({l for l, _ in layout.values()})}
        for name, (layer, head) in layout.items():
            arg = head_log_attention_rows(lm.layers[layer], qk[layer], head, segments, q.clip(0)).argmax(-1)
            hit = jnp.where(hop == HOPS.index(name), (arg >= lo) & (arg <= hi), hit)
        at_q = jnp.take_along_axis(out.last_hidden_state, q.clip(0)[..., None], axis=1)        # [B, K, H]
        nxt = jnp.take_along_axis(batch["input_ids"], jnp.minimum(q + 1, batch["input_ids"].shape[1] - 1), axis=1)
        right = model.logits_from_hidden(at_q).argmax(-1) == nxt
        return hit, right
    return found


class HopFind:
    """`HopFind(agent, samples_and_kinds, layout)(params)` → {hop: {"rows", "found", "rate"}} over the pointer rows
    of the samples that `layout` places, plus {"<hop>:first"} for the first row of each answer of the answer hops
    (match, match_first, read_match: the first digit, the first value token) and {"<hop>:next_token"} for those
    hops: how often the model's own argmax there is the token the copy writes. samples_and_kinds: (TrainSample,
    "tap" | "read") pairs; a tap item gets its tap rows, a read item its read rows (PiecePointers). The batches
    and the jitted pass are built once, so a training run can call it at every evaluation."""

    def __init__(self, agent, samples_and_kinds: Sequence[tuple[object, str]], layout: dict[str, tuple[int, int]],
                 *, rows: int = 8):
        tokenizer = getattr(getattr(agent.policy, "encoder", None), "tokenizer", None) or agent.tokenizer
        pointers = PiecePointers(tokenizer, tuple(layout))
        self.fn = _found_fn(agent.graphdef, agent.rest, layout)
        self.batches = []
        for k in range(0, len(samples_and_kinds), rows):
            chunk = []
            for j, (sample, kind) in enumerate(samples_and_kinds[k:k + rows]):
                sample.pointers = pointers(sample, f"item {k + j}", read=kind == "read")
                chunk.append(sample)
            self.batches.append(build_batch(chunk, agent.model_config, pad_id=agent.tokenizer.pad_id, rows=rows))

    def __call__(self, params) -> dict[str, dict]:
        counts: dict[str, list[int]] = {}
        answer_hops = ("match", "match_first", "read_match")
        for batch in self.batches:
            hit, right = (np.asarray(a) for a in self.fn(params, batch))
            ptr = np.asarray(batch["pointers"])
            for b in range(ptr.shape[0]):
                last_q = {}
                for r in range(ptr.shape[1]):
                    h, q = int(ptr[b, r, 0]), int(ptr[b, r, 1])
                    if h < 0:   # padding, and every row of a filler row
                        continue
                    name = HOPS[h]
                    entry = counts.setdefault(name, [0, 0])
                    entry[0], entry[1] = entry[0] + int(hit[b, r]), entry[1] + 1
                    if name in answer_hops and ptr[b, r, 2] != q:   # match_first's self rows copy nothing
                        tok = counts.setdefault(f"{name}:next_token", [0, 0])
                        tok[0], tok[1] = tok[0] + int(right[b, r]), tok[1] + 1
                        if last_q.get(name, -2) != q - 1:           # a new answer starts (rows in query order)
                            first = counts.setdefault(f"{name}:first", [0, 0])
                            first[0], first[1] = first[0] + int(hit[b, r]), first[1] + 1
                        last_q[name] = q
        return {name: {"rows": n, "found": k, "rate": k / n if n else float("nan")}
                for name, (k, n) in sorted(counts.items())}


def hop_find_rates(agent, samples_and_kinds: Sequence[tuple[object, str]], layout: dict[str, tuple[int, int]],
                   *, rows: int = 8) -> dict[str, dict]:
    """HopFind's rates for the agent's own params."""
    return HopFind(agent, samples_and_kinds, layout, rows=rows)(agent.params)
