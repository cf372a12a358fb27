"""Consumer lag: committed offsets against the brokers' log-end offsets, in records and in
seconds, judged per partition and joined to the partition's owner (``docs/lag.md``).

Plain Python, no Spark: :mod:`groupwatch.detect.lag.model` holds the values, :mod:`.estimate` the
seconds-behind estimate, :mod:`.book` the committed offsets, :mod:`.judge` the status rules and
the findings they open and resolve, :mod:`.poll` the memory between polls, and :mod:`.fleet`
a whole poll judged as columns (the job's), held to :mod:`.poll`'s keeper.
"""
