"""spark-submit's command line and environment for the applications of this package (the smoke read, the
streaming drill's job): deploy mode client, the Kafka source's jars, the settings, and the launcher that runs the
application's module from this package, installed beside the driver's Python."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LAUNCHER = Path(__file__).resolve().parent / "spark_app.py"


def jar_list(jars):
    """A directory's jars as spark-submit's comma-separated list; anything else as given."""
    if jars and Path(jars).is_dir():
        return ",".join(str(j) for j in sorted(Path(jars).glob("*.jar")))
    return jars


def submit_command(spark_submit, master, name, jars, confs, properties=None):
    """spark-submit's arguments up to the application: deploy mode client (the driver runs here), the
    spark-sql-kafka jars (a directory or a list), the settings (KEY=VALUE), and the cluster's Spark settings
    file (properties: its security settings and secret, which never go on the command line)."""
    cmd = [spark_submit, "--master", master, "--deploy-mode", "client", "--name", name]
    if properties:
        cmd += ["--properties-file", str(properties)]
    if jars:
        cmd += ["--jars", jar_list(jars)]
    for conf in confs:
        cmd += ["--conf", conf]
    return cmd


def spark_home(spark_submit):
    """The Spark install a spark-submit belongs to: <home>/bin/spark-submit of a Spark release (links followed),
    or, for pyspark installed with pip, the pyspark package of the Python beside it (bin/python). None when
    neither can be told."""
    path = Path(spark_submit)
    release = path.resolve().parent.parent
    if (release / "jars").is_dir():
        return str(release)
    python = path.parent / "python"
    if not python.exists():
        return None
    found = subprocess.run(
        [str(python), "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if found.returncode != 0:
        return None
    return found.stdout.strip() or None


def submit_env(spark_submit=None):
    """The environment spark-submit runs in: the driver and any Python worker use this Python, and SPARK_HOME is
    spark-submit's own install unless it is set. (This Python need not have pyspark: the driver takes it from
    SPARK_HOME; but without SPARK_HOME, a pip-installed spark-submit looks for pyspark with this Python.)"""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    if spark_submit and not env.get("SPARK_HOME"):
        home = spark_home(spark_submit)
        if home:
            env["SPARK_HOME"] = home
    return env


def app_command(submit, module, args):
    """The whole command: submit (submit_command's list), the launcher, the application's module
    (kafka_smoke.job, kafka_smoke.stream_job) and its arguments."""
    return [*submit, str(LAUNCHER), module, *args]
