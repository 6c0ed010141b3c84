"""The file spark-submit runs for every Spark application of this package.

spark-submit runs a Python application as a file, outside any package. This
one only runs the module its first argument names (smoke.job,
smoke.stream_job, ...) as __main__, from the copy of this package that
--py-files puts on the path of the driver and of every executor, so the jobs
import their package like any other code.
"""

import runpy
import sys

if __name__ == "__main__":
    runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)
