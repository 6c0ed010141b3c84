"""The file spark-submit runs for every Spark application of this package.

spark-submit runs a Python application as a file, outside any package. This
one only runs the module its first argument names (kafka_smoke.job,
kafka_smoke.stream_job) as __main__, from the package installed where the
driver's Python is, so the jobs import their package like any other code.
Their executors run no Python: what they read and compute is Spark's own.
"""

import runpy
import sys

if __name__ == "__main__":
    runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)
