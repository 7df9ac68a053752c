"""Memory of SFT's prompt next-token loss (sft.prompt_loss_weight) with and without chunking the LM head.

    python -m benchmarks.prompt_loss_memory --json out.json [--seq 12288 --vocab 152064 --hidden 3584]

Compiles (does not run) value-and-grad of train/sft.chunked_next_token_nll over one row of `--seq` prompt
positions through a bf16 LM head of the 7B recipe's vocabulary, for each `--chunks` value (0 = all positions
at once), and reads the compiled program's temporary bytes (memory_analysis). Reports each against chunk 0,
measured in the same run. The head is a plain matrix (hidden @ embedding.T) so that only the loss's own
buffers differ between the programs; the model body's activations are the same for every chunk. The default
hidden size is small (256) so the compile stays quick on a CPU host; the logits, which dominate, do not
depend on it.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp

from gui_jax.train.sft import chunked_next_token_nll


def temp_bytes(seq: int, vocab: int, hidden: int, chunk: int) -> int:
    def loss(h, emb, ids, w):
        return chunked_next_token_nll(lambda x: x @ emb.T, h, ids, w, chunk)
    shapes = (jax.ShapeDtypeStruct((1, seq, hidden), jnp.bfloat16), jax.ShapeDtypeStruct((vocab, hidden), jnp.bfloat16),
              jax.ShapeDtypeStruct((1, seq), jnp.int32), jax.ShapeDtypeStruct((1, seq - 1), jnp.float32))
    compiled = jax.jit(jax.value_and_grad(loss, argnums=(0, 1))).lower(*shapes).compile()
    return int(compiled.memory_analysis().temp_size_in_bytes)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--seq", type=int, default=12288)         # UI-S1's prompt budget
    ap.add_argument("--vocab", type=int, default=152064)      # Qwen2.5-VL
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--chunks", default="0,4096,1024,256")
    args = ap.parse_args(argv)
    rows = []
    for chunk in (int(c) for c in args.chunks.split(",")):
        t = time.time()
        rows.append({"chunk": chunk, "temp_bytes": temp_bytes(args.seq, args.vocab, args.hidden, chunk),
                     "compile_s": round(time.time() - t, 2)})
    base = next(r["temp_bytes"] for r in rows if r["chunk"] == 0) if any(r["chunk"] == 0 for r in rows) else None
    for r in rows:
        r["vs_one_pass"] = round(r["temp_bytes"] / base, 4) if base else None
        print(f"chunk {r['chunk']:>6}: {r['temp_bytes'] / 2**30:7.2f} GiB temporaries"
              + (f" ({r['vs_one_pass']:.3f} of one pass)" if base else ""))
    out = {"device": str(jax.devices()[0].device_kind), "platform": jax.devices()[0].platform,
           "loadavg": os.getloadavg(), "seq": args.seq, "vocab": args.vocab, "hidden": args.hidden,
           "logits_bytes_one_pass_f32": args.seq * args.vocab * 4, "results": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
