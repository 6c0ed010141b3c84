"""Filters: Spark's own security settings (module_utils/spark_security.py), composed for the roles."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import _guard
from ansible_collections.stretch.kafka.plugins.module_utils import spark_security, spark_sites, stream_jobs


def spark_properties_file(secret, kind, master="", extra=None, variable="extra settings"):
    """The text of a party's Spark properties file (kind: daemon or application), secret included, then the
    extra settings ({key: value}) of variable, which may not change what the roles derive."""
    problems = spark_security.override_problems(extra or {}, variable)
    if problems:
        raise spark_security.SparkSecurityError("; ".join(problems))
    return spark_security.render({**spark_security.properties(secret, kind, master), **(extra or {})})


def spark_secret_problem(secret):
    """Why secret cannot be a Spark cluster's secret, or '' (never the secret itself)."""
    return spark_security.secret_problem(secret)


def spark_secret_conflicts(hosts, hostvars):
    """Why these Spark hosts' secrets cannot work together: one per DC's cluster, the same on all its hosts."""
    return spark_security.secret_conflicts(
        [
            {
                "host": host,
                "dc": hostvars[host].get("kafka_dc") or "",
                "secret": hostvars[host].get("spark_auth_secret") or "",
            }
            for host in hosts
        ]
    )


def smoke_spark_problems(clusters, master, secret, conf):
    """Why the smoke test cannot submit its reads: a DC's cluster without its secret, a spark:// master
    without kafka_smoke_spark_secret, extra settings that would change the security ones."""
    problems = []
    for dc, cluster in sorted((clusters or {}).items()):
        cluster = cluster if isinstance(cluster, dict) else {}
        problem = spark_security.secret_problem(cluster.get("secret"))
        if problem:
            problems.append(
                f"kafka_smoke_spark_clusters[{dc!r}].secret {problem}: the read runs on that DC's Spark cluster, "
                "which admits only applications with its secret (the spark_auth_secret of its hosts)"
            )
        problems += spark_security.override_problems(
            cluster.get("conf") or [], f"kafka_smoke_spark_clusters[{dc!r}].conf"
        )
    if str(master).startswith("spark://"):
        problem = spark_security.secret_problem(secret)
        if problem:
            problems.append(f"kafka_smoke_spark_secret {problem}: kafka_smoke_spark_master {master} needs its secret")
    return problems + spark_security.override_problems(conf or [], "kafka_smoke_spark_conf")


def smoke_spark_files(clusters, master, secret):
    """[{name, content}] of the smoke test's Spark settings files: default.properties for its master, and
    <dc>.properties for each DC's cluster, each with that cluster's secret (none for a local master)."""
    files = [{"name": "default.properties", "content": spark_properties_file(secret, "application", master)}]
    for dc, cluster in sorted((clusters or {}).items()):
        content = spark_properties_file(cluster.get("secret"), "application", cluster.get("master", ""))
        files.append({"name": f"{dc}.properties", "content": content})
    return files


def wheel_modules(wheel_dir):
    """The Python modules the wheels in wheel_dir (on the controller) hold; None without a wheel directory (the
    packages come from an index, which the controller cannot look into)."""
    if not wheel_dir:
        return None
    found = set()
    for wheel in sorted(Path(wheel_dir).glob("*.whl")):
        try:
            with zipfile.ZipFile(wheel) as archive:
                found |= stream_jobs.modules_of(archive.namelist())
        except (OSError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{wheel} is not a readable wheel: {exc}") from exc
    return found


def stream_job_problems(jobs, users, declared_acls, super_users, wheel_dir):
    """Why the streaming jobs (stream_jobs) cannot run, each naming its job (module_utils/stream_jobs.py),
    with their files and modules looked for on the controller."""
    return stream_jobs.problems(
        jobs,
        users=users,
        declared_acls=declared_acls,
        super_users=super_users or (),
        file_exists=os.path.isfile,
        provided_modules=wheel_modules(wheel_dir),
    )


class FilterModule:
    def filters(self):
        return {
            "spark_properties_file": _guard(spark_properties_file),
            "spark_secret_problem": _guard(spark_secret_problem),
            "spark_secret_conflicts": _guard(spark_secret_conflicts),
            "spark_override_problems": _guard(spark_security.override_problems),
            "smoke_spark_problems": _guard(smoke_spark_problems),
            "smoke_spark_files": _guard(smoke_spark_files),
            "stream_jobs": _guard(stream_jobs.jobs),
            "spark_sites": _guard(spark_sites.clusters),
            "stream_job_problems": _guard(stream_job_problems),
        }
