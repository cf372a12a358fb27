"""spark-submit entry point of the groupwatch streaming job.

    spark-submit --master <url> --jars "$(ls .groupwatch/jars/spark/*.jar | paste -sd,)" \\
        streaming/groupwatch_job.py --conf conf/local.toml [--once] [--set section.key=value]

Everything happens in the package; this file only turns arguments into a call.
"""

import sys

from groupwatch.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["run", *sys.argv[1:]]))
