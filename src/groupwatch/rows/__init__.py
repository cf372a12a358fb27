"""The rows of one group's step, built beside the findings engine from what it applied.

:func:`groupwatch.processing.process_group` decodes each record, hands it to the engine
(:meth:`groupwatch.detect.Analyzer.apply`) and gives the engine's report to
:func:`groupwatch.rows.step.record_rows`, which builds the record's rows, classic and modern
side by side, and carries the open ownership intervals to the next record:

- ``source.py``: the record as Spark's Kafka source delivers it, the source columns every row
  keeps, the quarantine row of what did not decode;
- ``findings.py``: a finding as the ``findings`` table holds it;
- ``classic.py``: a group-metadata record's snapshot and member rows;
- ``modern.py``: a KIP-848, streams or share group's snapshot and member rows, read off the
  engine's state of the group after the record;
- ``classic_ownership.py``, ``modern_ownership.py``: ``partition_ownership`` intervals, in
  generations and in member epochs, each one :class:`~groupwatch.tables.OwnershipInterval`;
- ``share.py``: a share group's ``share_partition_history`` and ``share_partition_state`` rows,
  from the engine's state of each share partition after a ``__share_group_state`` record;
- ``step.py``: one record's rows from the engine's report, and the ownership open after it.

Pure: nothing here knows about Spark.
"""
