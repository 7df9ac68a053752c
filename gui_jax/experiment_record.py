"""The outcome record of an experiment: every finished point's per-task successes, kept beside its report.

A point's workdir (checkpoints, logs) lives on the machine that ran it; the report's pooled statistics need
each point's per-task 0/1 outcomes. `<results_dir>/<name>.outcomes.json` keeps them, so a report can be
rebuilt, and new seeds pooled with old ones, on a machine that no longer has the old workdirs:

    {"format": 1, "task_lists": [[task id, ...], ...],
     "points": {"arm/seed=S": {"settings": {...}, "time": {...} | null,
                               "stages": {stage: {"tasks": index into task_lists, "success": "0110..."}},
                               "tables": {title: markdown}  (optional: the job's report_tables)}}}

Task lists are stored once (every arm of an experiment is usually scored on the same held-out tasks). A
stored point is used only while its settings equal the spec's (gui_jax.experiment.settings): a changed arm
is a different experiment, and its stale entries are dropped at the next write (git history keeps them).
"""
from __future__ import annotations

import json
import os

FORMAT = 1


class RecordError(ValueError):
    """An outcome record that cannot be read back (the message names the file and the entry)."""


def record_path(results_dir: str, name: str) -> str:
    return os.path.join(results_dir, name + ".outcomes.json")


def load_record(path: str) -> dict:
    """{point key: {"settings", "time", "stages": {stage: {task id: 0/1}}}}; {} when the file is absent."""
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            raw = json.load(f)
    except ValueError as e:
        raise RecordError(f"{path}: not JSON ({e}); restore it from git or delete it") from e
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise RecordError(f"{path}: format {raw.get('format') if isinstance(raw, dict) else None!r}, "
                          f"expected {FORMAT}")
    lists = raw.get("task_lists", [])
    out = {}
    for key, entry in raw.get("points", {}).items():
        stages = {}
        for stage, s in entry.get("stages", {}).items():
            where = f"{path}: points[{key!r}].stages[{stage!r}]"
            i = s.get("tasks")
            if not (isinstance(i, int) and 0 <= i < len(lists)):
                raise RecordError(f"{where}.tasks = {i!r} is not an index into task_lists (0..{len(lists) - 1})")
            ids, succ = lists[i], s.get("success", "")
            if len(ids) != len(succ) or set(succ) - {"0", "1"}:
                raise RecordError(f"{where}.success: {len(succ)} outcomes of '0'/'1' expected "
                                  f"{len(ids)} (one per task)")
            stages[stage] = {t: int(c) for t, c in zip(ids, succ)}
        out[key] = {"settings": entry.get("settings"), "time": entry.get("time"), "stages": stages,
                    "tables": entry.get("tables") or {}}
    return out


def write_record(path: str, points: dict) -> None:
    """Writes {point key: {"settings", "time", "stages": {stage: {task id: 0/1}}}} compactly (points sorted,
    stages in the job's order, one line per point), so a re-run that changes nothing leaves the file
    byte-identical."""
    lists, index, entries = [], {}, {}
    for key in sorted(points):
        p = points[key]
        stages = {}
        for stage in p["stages"]:  # the job's order: an arm without a stage reads the last one
            outcomes = p["stages"][stage]
            ids = tuple(outcomes)
            if ids not in index:
                index[ids] = len(lists)
                lists.append(list(ids))
            stages[stage] = {"tasks": index[ids], "success": "".join(str(int(v)) for v in outcomes.values())}
        entries[key] = {"settings": p["settings"], "time": p.get("time"), "stages": stages,
                        **({"tables": p["tables"]} if p.get("tables") else {})}
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in entries.items())
    with open(path, "w") as f:
        f.write(f'{{"format": {FORMAT},\n "task_lists": {json.dumps(lists)},\n "points": {{\n{body}\n }}}}\n')
