"""The call-relationship graph: who invoked or hooked whom, with counts (US-04).

Counted from the recorded message log (``invoke_request`` and ``hook_event`` messages,
denied ones included and shown apart) and drawn server-side as SVG by the
``monitoring/_call_graph.html`` template: roles on a circle, one curved arrow per
(caller, callee, kind) with its count, over one task (the filtered one, else the latest).
The live page refreshes it when a new invoke or hook is pushed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q

from monitoring.live_filters import LiveFilters
from monitoring.message_log import filtered_messages
from monitoring.models import Task
from monitoring.role_labels import role_labels, role_order

WIDTH = 560
HEIGHT = 440
NODE_R = 26


@dataclass(slots=True)
class Edge:
    """``count`` calls of ``kind`` (invoke/hook) from ``source`` to ``target``, ``denied`` of them refused."""

    source: str
    target: str
    kind: str
    count: int
    denied: int


def call_edges(user: Any, filters: LiveFilters) -> tuple[list[Edge], str | None]:
    """The graph's edges for what ``user`` may see under ``filters`` (type filter ignored),
    counted over one task: the filtered task, or without a task filter the task of the
    latest invoke or hook (issue 30: counts summed across tasks said nothing about any of
    them). Returns the edges and that task's id (None when nothing was recorded)."""
    queryset = filtered_messages(user, LiveFilters(role=filters.role, task=filters.task, project=filters.project))
    queryset = queryset.filter(type__in=("invoke_request", "hook_event"))
    task_id = filters.task or queryset.order_by("-seq").values_list("task_id", flat=True).first()
    if task_id is None:
        return [], None
    rows = (
        queryset.filter(task_id=task_id)
        .values("from_role", "to_role", "type")
        .annotate(total=Count("id"), denied=Count("id", filter=Q(status="denied")))
        .order_by()
    )
    edges = [
        Edge(
            r["from_role"] or "user",
            r["to_role"] or "?",
            "invoke" if r["type"] == "invoke_request" else "hook",
            r["total"],
            r["denied"],
        )
        for r in rows
    ]
    return edges, task_id


def layout(edges: list[Edge]) -> dict[str, Any]:
    """Node positions and edge paths for the SVG template (pixels)."""
    involved = {e.source for e in edges} | {e.target for e in edges}
    order = [r for r in role_order() if r in involved] + sorted(involved - set(role_order()))
    labels = role_labels()
    count = len(order)
    cx, cy = WIDTH / 2, HEIGHT / 2
    radius = 0 if count == 1 else min(cx, cy) - NODE_R - 30
    nodes: dict[str, dict[str, Any]] = {}
    for index, role in enumerate(order):
        angle = -math.pi / 2 + 2 * math.pi * index / max(1, count)
        emoji, name = labels.get(role, ("", role))
        nodes[role] = {
            "role": role,
            "emoji": emoji,
            "name": name,
            "x": round(cx + radius * math.cos(angle), 1),
            "y": round(cy + radius * math.sin(angle), 1),
        }
    peak = max((e.count for e in edges), default=1)
    drawn = []
    for edge in sorted(edges, key=lambda e: (e.source, e.target, e.kind)):
        a, b = nodes[edge.source], nodes[edge.target]
        width = round(1.2 + 3 * math.log1p(edge.count) / math.log1p(peak), 2)
        if edge.source == edge.target:
            x, y = a["x"], a["y"] - NODE_R
            path = f"M {x - 8} {y} C {x - 40} {y - 50}, {x + 40} {y - 50}, {x + 8} {y}"
            drawn.append({**_edge_dict(edge, width), "d": path, "lx": x, "ly": y - 44})
            continue
        dx, dy = b["x"] - a["x"], b["y"] - a["y"]
        dist = math.hypot(dx, dy) or 1.0
        ux, uy = dx / dist, dy / dist
        # Curve to the left of the direction of travel, so A->B and B->A do not overlap;
        # hooks bend further than invokes.
        bend = 22 if edge.kind == "invoke" else 44
        x1, y1 = a["x"] + ux * NODE_R, a["y"] + uy * NODE_R
        x2, y2 = b["x"] - ux * (NODE_R + 4), b["y"] - uy * (NODE_R + 4)
        mx, my = (x1 + x2) / 2 - uy * bend, (y1 + y2) / 2 + ux * bend
        path = f"M {x1:.1f} {y1:.1f} Q {mx:.1f} {my:.1f} {x2:.1f} {y2:.1f}"
        lx, ly = 0.25 * x1 + 0.5 * mx + 0.25 * x2, 0.25 * y1 + 0.5 * my + 0.25 * y2
        drawn.append({**_edge_dict(edge, width), "d": path, "lx": round(lx, 1), "ly": round(ly, 1)})
    return {"width": WIDTH, "height": HEIGHT, "nodes": list(nodes.values()), "edges": drawn, "node_r": NODE_R}


def _edge_dict(edge: Edge, width: float) -> dict[str, Any]:
    return {
        "source": edge.source,
        "target": edge.target,
        "kind": edge.kind,
        "count": edge.count,
        "denied": edge.denied,
        "width": width,
    }


def call_graph(user: Any, filters: LiveFilters) -> dict[str, Any]:
    """Everything ``_call_graph.html`` needs: ``{width, height, nodes, edges, node_r, filters,
    task}`` (``task``: the Task whose calls are counted, or None)."""
    edges, task_id = call_edges(user, filters)
    task = Task.objects.filter(pk=task_id).only("id", "title").first() if task_id else None
    return {**layout(edges), "filters": filters, "task": task}
