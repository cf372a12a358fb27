"""Every page of the dashboard over one ``delta.root``, as markup (tests/dashboard/markup.py):
the fleet a page of groups at a time, and the group page, the partition history and the data
health of each group the fleet lists.  A test compares them between tables that hold the same
rows written by different writers (Spark, delta-rs, upkeep's rewrites)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from groupwatch.dashboard.filters import Filters
from groupwatch.dashboard.pages import Pages
from groupwatch.delta.read import DeltaStore
from tests.dashboard.markup import page


def _markup(pages: Pages, path: str, f: Filters) -> ET.Element:
    root = page(pages.render(path, f))
    said = " ".join("".join(root.itertext()).split())
    assert "failed to render" not in said, f"{path} {f}: {said[:2000]}"
    return root


def fleet_groups(pages: Pages) -> list[str]:
    """The groups of the fleet page, in its order, every page of it."""
    out: list[str] = []
    at = 1
    while True:
        root = _markup(pages, "/", Filters(page=at))
        rows = [r.get("data-group") for r in root.iter("tr") if r.get("data-group")]
        if not rows or (out and rows[0] in out):
            return out  # past the last page, the last page again
        out += [str(g) for g in rows]
        at += 1


def every_page(root: Path) -> dict[str, ET.Element]:
    """Each page's markup by its name: ``fleet <n>``, ``group <g>``, ``partitions <g>``,
    ``health``."""
    pages = Pages(DeltaStore(root))
    groups = fleet_groups(pages)
    assert groups, f"the fleet page over {root} lists no group"
    out = {"health": _markup(pages, "/health", Filters())}
    at = 1
    while (at - 1) * 50 < len(groups):
        out[f"fleet {at}"] = _markup(pages, "/", Filters(page=at))
        at += 1
    for g in groups:
        out[f"group {g}"] = _markup(pages, "/group", Filters(group=g))
        out[f"partitions {g}"] = _markup(pages, "/partitions", Filters(group=g))
    return out
