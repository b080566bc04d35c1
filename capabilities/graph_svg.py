"""The capability dependency graph (PRD §4.2 ``get_capability_dependency_graph``) extended
with seed 003 skills, and its server-side SVG drawing (no script, no CDN).

Three columns, left to right: **roles**, **capabilities** (grouped by skill; built-in cards
last), **skills**. Edges: a role ``owns`` a card; a skill ``provides`` its cards; a skill
``depends_on`` the card that serves a dependency (dashed; red when required and not active);
with ``invoke`` on, a role ``may_invoke`` another (arcs left of the roles). Rows are ordered
by the barycentre of their neighbours (one Sugiyama sweep), so edges cross less.
"""

from __future__ import annotations

from html import escape
from typing import Any

from django.utils.translation import gettext

from capabilities.lifecycle import dependency_status
from capabilities.models import Skill
from capabilities.names import role_name
from capabilities.registry import get_capability_dependency_graph
from teamclaw.labels import label
from teamclaw.runtime.config import ConfigSnapshot

ROW_H = 26
NODE_H = 20
COL_X = {"role": 20, "capability": 380, "skill": 800}
COL_W = {"role": 180, "capability": 300, "skill": 200}
TOP = 40
COLOURS = {
    "ACTIVATED": "#16a34a",
    "INSTALLED": "#2563eb",
    "DEACTIVATED": "#9ca3af",
    "DISCOVERED": "#a855f7",
    "ERROR": "#dc2626",
    "UNINSTALLED": "#d1d5db",
}


def skill_graph(snapshot: ConfigSnapshot, *, scope: str = "skills", invoke: bool = False) -> dict[str, Any]:
    """``{nodes: [{id, kind, label, enabled, status?, url}], edges: [{from, to, kind, ok}]}``.

    ``scope``: ``skills`` (skill cards, their owners and what they depend on) or ``all``
    (every card). ``invoke`` adds the ``may_invoke`` role edges."""
    base = get_capability_dependency_graph(snapshot)
    skills = [s for s in Skill.objects.exclude(status="UNINSTALLED")]
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []
    cards = snapshot.cards
    wanted_caps = {f"cap:{c}" for c, card in cards.items() if scope == "all" or card.skill_id}
    for skill in skills:
        node_id = f"skill:{skill.skill_id}"
        nodes[node_id] = {
            "id": node_id,
            "kind": "skill",
            "label": skill.skill_id,
            "enabled": skill.status == "ACTIVATED",
            "status": skill.status,
            "url": f"/skills/{skill.skill_id}/",
        }
        for dep in dependency_status(skill, skills):
            target = f"cap:{dep['capabilityId']}" if dep["capabilityId"] in cards else None
            if target is None:
                missing = f"missing:{dep['address']}"
                nodes[missing] = {"id": missing, "kind": "capability", "label": f"{dep['address']} (missing)"}
                nodes[missing].update(enabled=False, url="", missing=True)
                target = missing
            wanted_caps.add(target)
            ok = dep["active"] or not dep["required"]
            edges.append({"from": node_id, "to": target, "kind": "depends_on", "ok": ok, "required": dep["required"]})
    for node in base["nodes"]:
        if node["kind"] == "capability" and node["id"] in wanted_caps:
            card = cards[node["id"][4:]]
            label = card.address or card.capability_id
            nodes[node["id"]] = {**node, "label": label, "url": f"/capabilities/{card.capability_id}/"}
            if card.skill_id and f"skill:{card.skill_id}" in nodes:
                edges.append({"from": f"skill:{card.skill_id}", "to": node["id"], "kind": "provides", "ok": True})
    roles_used = set()
    for edge in base["edges"]:
        if edge["kind"] == "owns" and edge["to"] in nodes:
            edges.append({**edge, "ok": True})
            roles_used.add(edge["from"])
    if invoke:
        for edge in base["edges"]:
            if edge["kind"] == "may_invoke" and edge["from"] != edge["to"]:
                edges.append({**edge, "ok": True})
                roles_used.update((edge["from"], edge["to"]))
    for node in base["nodes"]:
        if node["kind"] == "role" and node["id"] in roles_used:
            nodes[node["id"]] = {**node, "url": f"/roles/{node['id'][5:]}/"}
    return {"nodes": list(nodes.values()), "edges": edges}


def _column(node: dict[str, Any]) -> str:
    return node["kind"] if node["kind"] in COL_X else "capability"


def layout(graph: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """``node id -> (x, y)`` of each node's top-left corner (column by kind, barycentric rows)."""
    columns: dict[str, list[dict[str, Any]]] = {"role": [], "capability": [], "skill": []}
    for node in graph["nodes"]:
        columns[_column(node)].append(node)
    neighbours: dict[str, list[str]] = {}
    for edge in graph["edges"]:
        if edge["kind"] == "may_invoke":
            continue
        neighbours.setdefault(edge["from"], []).append(edge["to"])
        neighbours.setdefault(edge["to"], []).append(edge["from"])
    columns["skill"].sort(key=lambda n: n["label"])
    rank = {n["id"]: i for i, n in enumerate(columns["skill"])}

    def centre(node: dict[str, Any], default: float) -> float:
        placed = [rank[m] for m in neighbours.get(node["id"], []) if m in rank]
        return sum(placed) / len(placed) if placed else default

    columns["capability"].sort(key=lambda n: (centre(n, 1e9), n["label"]))
    rank.update({n["id"]: i for i, n in enumerate(columns["capability"])})
    columns["role"].sort(key=lambda n: (centre(n, 1e9), n["label"]))
    rank.update({n["id"]: i for i, n in enumerate(columns["role"])})
    columns["skill"].sort(key=lambda n: (centre(n, 1e9), n["label"]))
    positions: dict[str, tuple[float, float]] = {}
    tallest = max((len(c) for c in columns.values()), default=1)
    for kind, nodes in columns.items():
        offset = (tallest - len(nodes)) * ROW_H / 2
        for index, node in enumerate(nodes):
            positions[node["id"]] = (COL_X[kind], TOP + offset + index * ROW_H)
    return positions


def render_svg(graph: dict[str, Any]) -> str:
    """The graph as an accessible SVG document (``<title>`` per node, links to pages)."""
    positions = layout(graph)
    rows = max((len([n for n in graph["nodes"] if _column(n) == k]) for k in COL_X), default=1)
    height = TOP + rows * ROW_H + 20
    width = COL_X["skill"] + COL_W["skill"] + 20
    by_id = {n["id"]: n for n in graph["nodes"]}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        'role="img" aria-labelledby="graph-title" class="depgraph" font-family="system-ui, sans-serif" font-size="12">',
        f'<title id="graph-title">{escape(gettext("Capability dependency graph"))}</title>',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#64748b"/></marker></defs>',
    ]
    for kind, title in (
        ("role", gettext("Roles")),
        ("capability", gettext("Capabilities")),
        ("skill", gettext("Skills")),
    ):
        parts.append(f'<text x="{COL_X[kind]}" y="20" font-weight="600" fill="#334155">{escape(title)}</text>')
    for edge in graph["edges"]:
        if edge["from"] not in positions or edge["to"] not in positions:
            continue
        (x1, y1), (x2, y2) = positions[edge["from"]], positions[edge["to"]]
        source, target = by_id[edge["from"]], by_id[edge["to"]]
        y1, y2 = y1 + NODE_H / 2, y2 + NODE_H / 2
        if edge["kind"] == "may_invoke":
            bend = 12 + abs(y2 - y1) / 6
            path = f"M{x1},{y1} C{x1 - bend},{y1} {x2 - bend},{y2} {x2},{y2}"
            style = 'stroke="#cbd5e1" stroke-width="1" fill="none" marker-end="url(#arrow)"'
        else:
            if _column(source) == "skill":  # skills sit right of the cards they touch
                x1, x2 = x1, x2 + COL_W[_column(target)]
            else:
                x1 = x1 + COL_W[_column(source)]
            mid = (x1 + x2) / 2
            path = f"M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}"
            if edge["kind"] == "depends_on":
                colour = "#64748b" if edge["ok"] else "#dc2626"
                style = (
                    f'stroke="{colour}" stroke-width="1.5" stroke-dasharray="5 3" fill="none" marker-end="url(#arrow)"'
                )
            elif edge["kind"] == "provides":
                style = 'stroke="#86efac" stroke-width="1.2" fill="none"'
            else:
                style = 'stroke="#94a3b8" stroke-width="1" fill="none" marker-end="url(#arrow)"'
        title = escape(label(edge["kind"], "edge"))
        parts.append(f'<path d="{path}" {style} data-kind="{edge["kind"]}"><title>{title}</title></path>')
    for node in graph["nodes"]:
        x, y = positions[node["id"]]
        kind = _column(node)
        w = COL_W[kind]
        fill = "#fff"
        stroke = "#94a3b8"
        if node["kind"] == "skill":
            stroke = COLOURS.get(node.get("status", ""), "#94a3b8")
        elif node.get("missing"):
            stroke, fill = "#dc2626", "#fef2f2"
        elif not node.get("enabled", True):
            fill = "#f1f5f9"
        text = node["label"]
        if node["kind"] == "role":  # the role's name in the page's language
            text = role_name(node["id"].split(":", 1)[-1], text)
        text = text if len(text) <= 44 else text[:43] + "…"
        status = f" · {node['status']}" if node.get("status") else ""
        box = (
            f'<rect x="{x}" y="{y}" width="{w}" height="{NODE_H}" rx="4" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{2 if node["kind"] == "skill" else 1}"/>'
            f'<text x="{x + 6}" y="{y + 14}" fill="#0f172a">{escape(text)}{escape(status)}</text>'
            f"<title>{escape(node['id'])}{escape(status)}</title>"
        )
        url = node.get("url")
        inner = f'<a href="{escape(url)}">{box}</a>' if url else box
        parts.append(f'<g class="node {kind}" data-id="{escape(node["id"])}">{inner}</g>')
    parts.append("</svg>")
    return "\n".join(parts)
