"""Where a policy's held-out episodes fail: exact-match counts per (template, step, expert action type),
greedy, with the expert history, plus up to 3 wrong responses per cell.

    python experiments/step_errors.py WORKDIR HF_CHECKPOINT [config.key=python_literal ...]

WORKDIR is a quickstart-config run directory whose episodes are reused (e.g. an sft_curve.py run);
HF_CHECKPOINT a Hugging Face directory written by configs/export.py (its tokenizer is used); the
overrides are the run's, as for sft_curve.py.
"""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    from sft_curve import load_config

    from gui_jax.jobs.common import prepare
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig, build_messages, expert_response
    from gui_jax.rl.semi_online_rollout import SemiOnlineConfig, expert_element, judge_step
    from gui_jax.train.sft import expert_history
    if len(argv) < 2:
        raise SystemExit(__doc__)
    workdir, checkpoint = argv[0], argv[1]
    config, _, _ = load_config(argv[2:])
    config.model.checkpoint, config.model.tokenizer = checkpoint, "auto"
    _, _, _, test_eps = prepare(config, workdir)
    agent = Agent(config, seed=0)
    pcfg = PromptConfig(**config.prompt.to_dict())
    scfg = SemiOnlineConfig(reward_preset="paper")
    items = [(e, t) for e, ep in enumerate(test_eps) for t in range(len(ep.actions))]
    counts = collections.defaultdict(lambda: [0, 0])
    wrong = collections.defaultdict(list)
    for start in range(0, len(items), 64):
        chunk = items[start:start + 64]
        prompts = []
        for e, t in chunk:
            ep = test_eps[e]
            prompts.append(build_messages(ep.goal, expert_history(ep, t, pcfg), ep.observations[t], pcfg))
        for (e, t), g in zip(chunk, agent.policy.generate(prompts, temperature=0.0, seed=0)):
            ep = test_eps[e]
            key = (ep.template, t, ep.actions[t].type)
            right = judge_step(g.text, ep, t, pcfg, scfg).exact_match
            counts[key][0] += int(right)
            counts[key][1] += 1
            if not right and len(wrong[key]) < 3:
                expert = expert_response(ep.actions[t], ep.observations[t], pcfg, element=expert_element(ep, t))
                wrong[key].append((ep.goal, expert, g.text))
    for key in sorted(counts):
        print(f"{key[0]} step {key[1]} {key[2]}: {counts[key][0]}/{counts[key][1]}")
        for goal, expert, got in wrong[key]:
            print(f"    {goal!r}: expert {expert!r}, policy {got!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
