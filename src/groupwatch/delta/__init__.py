"""Delta tables without Spark: read (:mod:`.read`) and written (:mod:`.write`) with delta-rs,
and a local table's newest commits read from its log files (:mod:`.log`).

What reads or writes the job's tables outside a Spark session comes here: the dashboard, the
notifier, lag, upkeep's checks, and the job's driver writing a small batch. Nothing here
imports Spark, so the readers run where no JVM is.
"""
