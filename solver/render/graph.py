"""The graph writers of the formats table (`render/formats.py`): the field dependency graph
(`solver.pack.graph.analyse`) as Graphviz DOT, Mermaid, the `graph` JSON document, or SVG drawn by
Graphviz's `dot` when it is on PATH.

Fields are boxes (options) or ellipses (facts), in decision order; fields decided together (a
cycle) are outlined in red; an edge's tooltip names the rules and preferences behind it.
"""

from __future__ import annotations

import json
import shutil
import subprocess

from solver.errors import InputIssue, InvalidInput
from solver.model import Pack
from solver.pack.graph import GraphInfo, analyse

__all__ = ["dot", "dot_to_svg", "graph_json", "mermaid", "svg"]

DOT_TIMEOUT_SECONDS = 60.0


def _cycle_nodes(info: GraphInfo) -> set[str]:
    return {name for comp in info.components for name in comp}


def graph_json(pack: Pack) -> str:
    """The `graph` document (printed without a final newline, as `graph --json` always has)."""
    info = analyse(pack)
    doc = {
        "schema": 1,
        "status": "graph",
        "order": list(info.order),
        "components": [list(c) for c in info.components],
        "nodes": [
            {"name": n, "kind": pack.fields[n].kind, "group": pack.fields[n].group} for n in info.order
        ],
        "edges": [{"from": s, "to": d, "why": w.split(",")} for s, d, w in info.edges],
    }
    return json.dumps(doc, indent=2, sort_keys=True)


def mermaid(pack: Pack) -> str:
    info = analyse(pack)
    lines = ["flowchart LR"]
    for name in info.order:
        shape = f"{name}[({name})]" if pack.fields[name].kind == "fact" else f"{name}[{name}]"
        lines.append(f"    {shape}")
    lines += [f"    {s} --> {d}" for s, d, _ in info.edges]
    lines += [f"    style {n} stroke:#c00,stroke-width:2px" for n in sorted(_cycle_nodes(info))]
    return "\n".join(lines) + "\n"


def dot(pack: Pack) -> str:
    info = analyse(pack)
    cycle_nodes = _cycle_nodes(info)
    title = pack.name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    lines = [f'digraph "{title}" {{', "  rankdir=LR;"]
    for name in info.order:
        attrs = ["shape=ellipse" if pack.fields[name].kind == "fact" else "shape=box"]
        if name in cycle_nodes:
            attrs.append("color=red")
        lines.append(f'  "{name}" [{", ".join(attrs)}];')
    for src, dst, why in info.edges:
        lines.append(f'  "{src}" -> "{dst}" [tooltip="{why}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def svg(pack: Pack) -> str:
    return dot_to_svg(dot(pack))


def dot_to_svg(dot_text: str) -> str:
    """Render Graphviz DOT to SVG with `dot`; `InvalidInput` (exit 2) when `dot` is missing."""
    exe = shutil.which("dot")
    if exe is None:
        raise InvalidInput(
            [
                InputIssue(
                    field="format",
                    value="svg",
                    message=(
                        "--format svg needs Graphviz's `dot` on PATH (apt install graphviz / brew install "
                        "graphviz); or use --format dot and render it elsewhere"
                    ),
                )
            ]
        )
    try:
        done = subprocess.run(
            [exe, "-Tsvg"],
            input=dot_text,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",  # any bytes dot prints
            timeout=DOT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InvalidInput(
            [InputIssue(field="format", value="svg", message=f"running {exe} failed: {exc}")]
        ) from exc
    if done.returncode != 0:
        raise InvalidInput(
            [
                InputIssue(
                    field="format",
                    value="svg",
                    message=(f"{exe} -Tsvg failed (exit {done.returncode}): {done.stderr.strip()[:500]}"),
                )
            ]
        )
    return done.stdout
