"""Every table of the job, empty, under a fresh ``delta.root``: what ``sinks.ensure_tables``
makes there, made once per set of table properties and copied after.

``ensure_tables`` creates each of the job's tables with a Spark job of its own; a test that
needs a fresh set of them for every case (a new ``delta.root`` each) spent much of its time
there. A Delta table is its folder (its log holds relative paths only), so a copy of freshly
created empty tables is what ``ensure_tables`` would have made at the copy's path, but for the
table id of its metadata, which the copies share (only a streaming read of two of them, or a
test of ``ensure_tables``, would tell). The tests that prove ``ensure_tables`` itself
(``test_table_upgrade``) call it directly.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

from groupwatch import upkeep
from groupwatch.config import Config


class EmptyTables:
    """The templates, in folders under ``templates`` (the session fixture ``empty_tables``)."""

    def __init__(self, templates: Path) -> None:
        self._templates = templates
        #: the template of each set of table properties (upkeep's settings decide them)
        self._made: dict[str, Path] = {}

    def create(self, spark, config: Config) -> None:  # type: ignore[no-untyped-def]
        """``sinks.ensure_tables(spark, config)`` for a ``delta.root`` on local disk that
        holds no table yet."""
        from groupwatch.spark import sinks

        root = Path(config.delta.root)
        assert not root.exists() or not any(root.iterdir()), f"{root} already holds tables"
        key = json.dumps(upkeep.properties(config.upkeep, local=True), sort_keys=True)
        template = self._made.get(key)
        if template is None:
            template = self._templates / str(len(self._made)) / "delta"
            made = dataclasses.replace(
                config, delta=dataclasses.replace(config.delta, root=str(template))
            )
            sinks.ensure_tables(spark, made)
            self._made[key] = template
        shutil.copytree(template, root, dirs_exist_ok=True)
