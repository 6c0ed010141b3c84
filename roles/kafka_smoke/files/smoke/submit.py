"""spark-submit's command line and environment for the applications of this package (the smoke read, the
streaming jobs): deploy mode client, the Kafka source's jars, the settings, and this package itself, zipped and
shipped with --py-files to the driver and the executors."""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
LAUNCHER = PACKAGE / "spark_app.py"


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


def submit_env():
    """The environment spark-submit runs in: the driver and any Python worker use this Python."""
    return dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)


def package_zip(directory):
    """This package as directory/smoke.zip (smoke/...), for --py-files; made anew each time."""
    path = Path(directory) / "smoke.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for source in sorted(PACKAGE.glob("*.py")):
            z.write(source, f"smoke/{source.name}")
    return path


def app_command(submit, module, workdir, args):
    """The whole command: submit (submit_command's list), this package shipped from workdir, the launcher,
    the application's module (smoke.job, ...) and its arguments."""
    return [*submit, "--py-files", str(package_zip(workdir)), str(LAUNCHER), module, *args]
