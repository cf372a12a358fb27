"""Great Expectations on the rows a micro-batch is about to write.

The suites are JSON files in ``conf/expectations/<table>.json`` (GX's own suite format), so the
rules are reviewed as configuration, not code.  A failing expectation never stops the job: it
becomes a ``validation_results`` row and, for every offending record GX can point at, a
``quarantine`` row (stage ``validate``) with the record's raw bytes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger("groupwatch.validation")

#: Columns that point back at the source record of any validated row.
ID_COLUMNS = ["source_partition", "source_offset"]


@dataclass(frozen=True)
class ExpectationResult:
    table_name: str
    expectation: str
    column: str | None
    success: bool
    unexpected_count: int
    #: (source_partition, source_offset) of offending rows, as far as GX reports them.
    offenders: tuple[tuple[int, int], ...]
    details: str


class BatchValidator:
    """Built once per job; ``validate(table, df)`` per batch."""

    def __init__(self, suites_dir: Path) -> None:
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig
        from great_expectations.expectations.expectation_configuration import (
            ExpectationConfiguration,
        )

        self._context = gx.get_context(mode="ephemeral")
        # One progress bar per metric per batch would drown the job's own log.
        self._context.variables.progress_bars = ProgressBarsConfig(globally=False)
        source = self._context.data_sources.add_spark("groupwatch", persist=False)
        self._definitions: dict[str, Any] = {}
        for path in sorted(suites_dir.glob("*.json")):
            spec = json.loads(path.read_text())
            suite = self._context.suites.add(
                gx.ExpectationSuite(
                    name=spec["name"],
                    expectations=[ExpectationConfiguration(**e) for e in spec["expectations"]],
                )
            )
            batch = source.add_dataframe_asset(name=path.stem).add_batch_definition_whole_dataframe(
                "micro-batch"
            )
            self._definitions[path.stem] = self._context.validation_definitions.add(
                gx.ValidationDefinition(name=f"validate-{path.stem}", data=batch, suite=suite)
            )
        log.info("expectation suites: %s", ", ".join(self._definitions) or "none")

    @property
    def tables(self) -> list[str]:
        return list(self._definitions)

    def validate(self, table_name: str, df: DataFrame) -> list[ExpectationResult]:
        definition = self._definitions[table_name]
        result = definition.run(
            batch_parameters={"dataframe": df},
            result_format={
                "result_format": "COMPLETE",
                "unexpected_index_column_names": ID_COLUMNS,
            },
        )
        out = []
        for r in result.results:
            cfg = r.expectation_config
            column = cfg.kwargs.get("column")
            raw = r.result or {}
            offenders = tuple(
                (int(i["source_partition"]), int(i["source_offset"]))
                for i in raw.get("unexpected_index_list") or []
                if isinstance(i, dict) and i.get("source_offset") is not None
            )
            errored = bool((r.exception_info or {}).get("raised_exception"))
            out.append(
                ExpectationResult(
                    table_name=table_name,
                    expectation=f"{cfg.type}({column})" if column else cfg.type,
                    column=column,
                    success=bool(r.success) and not errored,
                    unexpected_count=int(raw.get("unexpected_count") or 0),
                    offenders=offenders,
                    details=json.dumps(
                        {
                            "kwargs": {k: v for k, v in cfg.kwargs.items() if k != "batch_id"},
                            "element_count": raw.get("element_count"),
                            "unexpected_percent": raw.get("unexpected_percent"),
                            "exception": (r.exception_info or {}).get("exception_message"),
                        },
                        default=str,
                    ),
                )
            )
        return out
