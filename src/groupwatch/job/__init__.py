"""The streaming job: what ``groupwatch run`` and ``streaming/groupwatch_job.py`` start."""
