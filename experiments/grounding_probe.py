"""Grounding probe: can the tiny model learn "Tap on '<label>'" → the element, on short screens?

SFT on the quickstart's training episodes where 95 % of the items are grounding items (every uniquely
labelled line of the first LINES UI lines of each training screen; train/grounding.py), then greedy
accuracy on 300 such items from held-out screens other than the home screen (whose app icons never
move). Chance is about 1 / LINES. Separates "the model cannot learn the look-up" from "the task
episodes give too little signal for it" (one index per ~150-token prompt).

    python experiments/grounding_probe.py WORKDIR LINES STEPS[,STEPS...] [config.key=python_literal ...]

e.g. `python experiments/grounding_probe.py runs/probe_last 10 300,600 "model.tokenizer='tiny_phonesim'"
"prompt.ui_text_index_last=True"`. Prints one JSON line per evaluation (training continues between them).
"""
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    from gui_jax.jobs import literal_overrides, load_config
    from gui_jax.jobs.common import prepare, write_snapshot
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig, build_messages
    from gui_jax.train.grounding import grounding_candidates, grounding_instruction
    from gui_jax.train.sft import train_sft
    if len(argv) < 3:
        raise SystemExit(__doc__)
    workdir, lines, steps = argv[0], int(argv[1]), [int(s) for s in argv[2].split(",")]
    config = load_config(os.path.join(HERE, "..", "configs", "quickstart.py"), **literal_overrides(argv[3:], flag="override"))
    config.prompt.max_ui_lines = lines
    config.sft.grounding_fraction = 0.95
    _, _, train_eps, test_eps = prepare(config, workdir)
    config.job = "grounding_probe"
    write_snapshot(config, workdir)   # as a job's config.json: later stages can check held-out overlap
    agent = Agent(config, seed=config.seed)
    pcfg = PromptConfig(**config.prompt.to_dict())
    items = [x for x in grounding_candidates(test_eps, pcfg) if x[1] > 0][:300]
    prompts = [build_messages(grounding_instruction(label), [], test_eps[e].observations[t], pcfg)
               for e, t, _, label in items]
    for n in steps:
        config.sft.num_steps = n
        start = time.time()
        train_sft(agent, train_eps, pcfg, config.sft, workdir=os.path.join(workdir, "sft"), logger=None)
        trained = time.time() - start
        gens = agent.policy.generate(prompts, temperature=0.0, seed=0)
        right = 0
        for (_, _, k, _), g in zip(items, gens):
            found = re.search(r'"element": (\d+)', g.text)
            right += bool(found and int(found.group(1)) == k)
        print(json.dumps({"steps": n, "lines": lines, "args": argv[3:], "heldout_ground_acc": right / len(items),
                          "n": len(items), "chance_approx": 1 / lines, "train_s": round(trained),
                          "load_avg": os.getloadavg()[0]}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
