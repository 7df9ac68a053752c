"""What a single-template SFT run writes on its answer steps: exact matches, distinct outputs, and whether
the held-out outputs are values seen as training answers (recalled) or read from the screen.

    python experiments/answer_probe.py WORKDIR TEMPLATE [config.key=python_literal ...]

WORKDIR is an `experiments/sft_curve.py` run trained with `data.templates=('TEMPLATE',)` and the same
overrides (grounding_levers.md §9 uses `model.tokenizer='tiny_phonesim_num'`). Greedy, expert history up
to the answer step, on the first 40 training episodes and every held-out one. Prints one JSON line per side.
"""
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def answer_step(ep) -> int:
    steps = [i for i, a in enumerate(ep.actions) if a.type == "answer"]
    if not steps:
        raise SystemExit(f"episode {ep.task_id!r} has no answer step: pick an answer template")
    return steps[0]


def answer_text(response: str, dialect: str) -> str:
    """The answer a response gives, through the project's parser ("" if it does not parse or is no answer)."""
    from gui_jax.core.dialects import ActionParseError, parse_response
    try:
        _, action = parse_response(response, dialect)
    except ActionParseError:
        return ""
    return (action.text or "") if action.type == "answer" else ""


def main(argv):
    from gui_jax.jobs import literal_overrides, load_config
    from gui_jax.jobs.common import load_stage_params, prepare, set_agent_params
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig, build_messages
    from gui_jax.train.sft import expert_history
    if len(argv) < 2:
        raise SystemExit(__doc__)
    workdir, template = argv[0], argv[1]
    overrides = literal_overrides(argv[2:] + [f"data.templates=('{template}',)"], flag="override")
    config = load_config(os.path.join(HERE, "..", "configs", "quickstart.py"), **overrides)
    _, _, train_eps, test_eps = prepare(config, os.path.join(workdir, "answer_probe"))
    agent = Agent(config, seed=0)
    params, step = load_stage_params(os.path.join(workdir, "sft", "checkpoints"), field="WORKDIR")
    set_agent_params(agent, params, workdir)
    pcfg = PromptConfig(**config.prompt.to_dict())
    train_values = {ep.actions[answer_step(ep)].text for ep in train_eps}
    for side, eps in (("train", train_eps[:40]), ("held_out", test_eps)):
        prompts, gold = [], []
        for ep in eps:
            t = answer_step(ep)
            prompts.append(build_messages(ep.goal, expert_history(ep, t, pcfg), ep.observations[t], pcfg))
            gold.append(ep.actions[t].text)
        outs = [answer_text(g.text, pcfg.dialect) for g in agent.policy.generate(prompts, temperature=0.0, seed=0)]
        print(json.dumps({
            "side": side, "step": int(step), "n": len(gold), "exact": sum(o == g for o, g in zip(outs, gold)),
            "distinct_outputs": len(set(outs)), "most_common": collections.Counter(outs).most_common(3),
            "outputs_that_are_training_answers": sum(o in train_values for o in outs),
            "gold_values_seen_as_training_answers": sum(g in train_values for g in gold),
            "examples": list(zip(gold[:4], outs[:4]))}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
