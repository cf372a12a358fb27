"""A page's Dash component tree as the HTML the browser's React renderer makes of it (XHTML,
so ElementTree can query it): tags, ids, classes, ``data-*`` attributes and text, without
figures or scripts.  It lets page tests assert on markup without a browser."""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET
from typing import Any

from dash.development.base_component import Component

#: Dash core components as the elements they render to.
_DCC = {"Link": "a", "Input": "input", "Dropdown": "div", "Graph": "div", "Location": "div"}
_ATTRS = {"className": "class", "colSpan": "colspan", "id": "id", "title": "title", "href": "href"}


def to_html(node: Any) -> str:
    if node is None:
        return ""
    if isinstance(node, list | tuple):
        return "".join(to_html(n) for n in node)
    if not isinstance(node, Component):
        return html.escape(str(node))
    props = node.to_plotly_json()["props"]
    if node._namespace == "dash_html_components":
        tag = node._type.lower()
    else:
        tag = _DCC.get(node._type, "div")
    attrs = []
    for key, value in props.items():
        name = _ATTRS.get(key, key if key.startswith("data-") else None)
        if name is not None and value is not None and not isinstance(value, dict | list):
            attrs.append(f' {name}="{html.escape(str(value), quote=True)}"')
    # A line break reads as a space in the page's text.
    inner = " " if tag == "br" else to_html(props.get("children"))
    return f"<{tag}{''.join(attrs)}>{inner}</{tag}>"


def page(components: list[Any]) -> ET.Element:
    """The page's markup, parsed."""
    return ET.fromstring(f"<main>{to_html(components)}</main>")


def text(element: ET.Element | None) -> str:
    """An element's text, its descendants' included, whitespace collapsed."""
    assert element is not None
    return " ".join("".join(element.itertext()).split())


def one(root: ET.Element, path: str) -> ET.Element:
    found = root.findall(path)
    assert len(found) == 1, f"{path}: {len(found)} elements"
    return found[0]


def classes(element: ET.Element) -> set[str]:
    return set((element.get("class") or "").split())
