"""``rlf view --export report.html``: the viewer as one self-contained HTML file to attach to a report.

The file holds the page, its script and style inline, and the data the live server would send: every run's
description and table columns, its unreadable lines, and the pages of up to ``max_episodes`` episodes per run
(within ``MAX_EPISODE_BYTES`` in all). With several runs the episodes of the tasks whose reward differs between
runs come first, so the comparison's side-by-side view works; then the run's episodes in file order. Nothing in
the file loads from anywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from rlfactory_envs.view.server import asset_text
from rlfactory_envs.view.viewer_data import NamedRun, bad_lines, episode, run_columns, run_meta

MAX_EPISODE_BYTES = 40 << 20
SCRIPTS = ("plots.js", "app.js")


def export_html(runs: list[NamedRun], out: Path, *, max_episodes: int) -> dict[str, int]:
    """Write the report to ``out``; how many episodes of each run it holds, by run name."""
    columns = [run_columns(named) for named in runs]
    episodes: dict[str, Any] = {}
    budget = MAX_EPISODE_BYTES
    held = {}
    for number, named in enumerate(runs):
        held[named.name] = 0
        for row in episode_order(number, runs, max_episodes):
            page = episode(named, row)
            budget -= len(msgspec.json.encode(page))
            if budget < 0:
                break
            episodes[f"{number}:{row}"] = page
            held[named.name] += 1
    data = {"runs": [run_meta(i, named) for i, named in enumerate(runs)], "columns": columns,
            "bad": [bad_lines(named) for named in runs], "episodes": episodes}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page_with(data), encoding="utf-8")
    return held


def episode_order(number: int, runs: list[NamedRun], limit: int) -> Iterator[int]:
    """Run ``number``'s rows to embed, at most ``limit``: one per task whose mean reward differs in another run,
    then the rest in file order."""
    means = [task_means(named) for named in runs]
    own = runs[number].run.store
    tasks = own.columns()["task"]
    first = {own.labels["task"].texts[code]: row for row, code in reversed(list(enumerate(tasks.tolist())))}
    differing = [first[task] for task, mean in means[number].items()
                 if any(task in other and other[task] != mean for i, other in enumerate(means) if i != number)]
    seen: set[int] = set()
    for row in [*differing, *range(len(tasks))]:
        if len(seen) >= limit:
            return
        if row not in seen:
            seen.add(row)
            yield row


def task_means(named: NamedRun) -> dict[str, float]:
    """Each task's mean reward in a run."""
    store = named.run.store
    columns = store.columns()
    texts = store.labels["task"].texts
    codes, rewards = columns["task"].astype(np.int64), np.nan_to_num(columns["reward"])
    sums = np.bincount(codes, weights=rewards, minlength=len(texts))
    counts = np.bincount(codes, minlength=len(texts))
    return {text: float(sums[i] / counts[i]) for i, text in enumerate(texts) if i < len(counts) and counts[i]}


def page_with(data: dict[str, Any]) -> str:
    """The page with its style, scripts and ``data`` inline (``<`` escaped in the data, so no text in it closes its
    script early)."""
    html = asset_text("index.html")
    html = html.replace('<link rel="stylesheet" href="assets/app.css">', f"<style>{asset_text('app.css')}</style>")
    payload = msgspec.json.encode(data).decode().replace("<", "\\u003c")
    inline = [f'<script type="application/json" id="rlf-export">{payload}</script>',
              f'<script id="rlf-engine">{asset_text("engine.js")}</script>',
              *(f"<script>{asset_text(name)}</script>" for name in SCRIPTS)]
    scripts = "".join(f'<script src="assets/{name}"></script>' for name in ("engine.js", *SCRIPTS))
    if scripts not in html:
        raise RuntimeError("index.html's script tags changed; update view/export.py")
    return html.replace(scripts, "\n".join(inline))
