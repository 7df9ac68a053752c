"""pointer_find: each hop's argmax-in-range rate, the answers' first rows and the next-token copies, counted
exactly as a brute-force pass over the full attention matrices counts them."""
from pathlib import Path

import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.jobs import load_config
from gui_jax.models.qwen2_5_vl.text import mrope_cos_sin
from gui_jax.rl.agent import Agent
from gui_jax.rl.batch import build_batch
from gui_jax.train.attention_pointers import HOPS, PiecePointers, head_log_attention, parse_layout
from gui_jax.train.pointer_find import hop_find_rates
from gui_jax.train.pretrain_data import encode_item, quickstart_prompt_config, reading_eval_items

REPO = Path(__file__).resolve().parents[2]
LAYOUT = ("index_first=0.0,label_bag=0.1,goal=0.1,index_next=0.2,match_first=1.0,row=1.1,prev_token=1.2,"
          "match_next=1.3,read_match=2.0")


def test_hop_rates_match_a_brute_force_count_over_full_attention_matrices():
    config = load_config(str(REPO / "configs" / "pretrain_tiny.py"), **{"model.num_hidden_layers": 3})
    agent = Agent(config, seed=3)
    text = agent.model_config.text
    layout = parse_layout(LAYOUT, text.num_hidden_layers, text.num_attention_heads)
    pcfg = quickstart_prompt_config(max_ui_lines=16)
    pairs = [(encode_item(agent.policy, it).sample, o) for o in ("tap", "read")
             for it in reading_eval_items(3, (8, 16), 1.0, seed=1, prompt_cfg=pcfg, objectives=(o,))]
    got = hop_find_rates(agent, pairs, layout, rows=2)        # 2 rows: batches that mix tap and read items

    want: dict[str, list[int]] = {}

    def add(name, ok):
        entry = want.setdefault(name, [0, 0])
        entry[0], entry[1] = entry[0] + int(ok), entry[1] + 1
    model = nnx.merge(agent.graphdef, agent.params, agent.rest)
    pointers = PiecePointers(agent.tokenizer, tuple(layout))
    for sample, kind in pairs:
        rows = pointers(sample, "item", read=kind == "read")
        b = build_batch([sample], agent.model_config, pad_id=agent.tokenizer.pad_id)
        out = model(b["input_ids"], attention_mask=b["attention_mask"], position_ids=b["position_ids"],
                    output_hidden_states=True)
        cos, sin = mrope_cos_sin(jnp.asarray(b["position_ids"]), text)
        ids = np.asarray(b["input_ids"][0])
        prev = {}
        for hop, q, lo, hi in rows.tolist():
            name = HOPS[hop]
            layer, head = layout[name]
            att = np.asarray(head_log_attention(model.language_model.layers[layer], out.hidden_states[layer], cos,
                                                sin, head))[0, q]
            found = lo <= int(att.argmax()) <= hi
            add(name, found)
            if name in ("match_first", "read_match") and lo != q:
                add(name + ":next_token", int(np.asarray(out.logits[0, q]).argmax()) == int(ids[q + 1]))
                if prev.get(name, -2) != q - 1:
                    add(name + ":first", found)
                prev[name] = q
    assert {k: (v["found"], v["rows"]) for k, v in got.items()} == {k: tuple(v) for k, v in want.items()}
    assert want["read_match:first"][1] == 3 and want["match_first:first"][1] == 3   # one answer per item
    assert all(v["rate"] == v["found"] / v["rows"] for v in got.values())
