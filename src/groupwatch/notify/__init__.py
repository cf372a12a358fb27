"""The built-in notifier: alert rules over the findings table, delivered to webhooks and the log.

Pure Python, no Spark import: the streaming job calls ``Notifier(config).process(findings_rows,
snapshot_rows)`` once per micro-batch; ``groupwatch notify --once`` runs it over the tables.
"""

from groupwatch.notify.notifier import Alert, Notifier
from groupwatch.notify.routing import NotifierConfig, NotifyConfigError, load_config

__all__ = ["Alert", "Notifier", "NotifierConfig", "NotifyConfigError", "load_config"]
