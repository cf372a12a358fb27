"""spark-submit entry point of the groupwatch streaming job.

    spark-submit --master <url> --jars "$(ls .groupwatch/jars/spark/*.jar | paste -sd, -)" \\
        --py-files dist/groupwatch.zip streaming/groupwatch_job.py --conf FILE [--once]

The README's "On a cluster" section is the tested recipe. Everything happens in the package;
this file only turns arguments into a call.
"""

import sys

from groupwatch.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["run", *sys.argv[1:]]))
