"""The packages the roles install: the collection's own from its bundle, hash-checked; third-party ones pinned."""

import json
import subprocess
import sys

import pytest
import yaml

from ansible_collections.stretch.kafka.plugins.filter.package_config import FilterModule
from ansible_collections.stretch.kafka.plugins.module_utils import packages
from testkit import REPO

filters = FilterModule().filters()
SHA = "ab" * 32
BUNDLE = {
    name: {"version": "0.1.0", "wheel": f"{name.replace('-', '_')}-0.1.0-py3-none-any.whl", "sha256": SHA}
    for name in packages.OWN
}


def test_the_bundle_installs_each_own_package_from_its_wheel_with_its_hash_and_no_index():
    wanted = filters["own_requirements"](BUNDLE, ["kafka-smoke", "kafka-group-source"], [], "/opt/smoke/own/")
    assert wanted["lines"] == [
        f"/opt/smoke/own/kafka_smoke-0.1.0-py3-none-any.whl --hash=sha256:{SHA}",
        f"/opt/smoke/own/kafka_group_source-0.1.0-py3-none-any.whl --hash=sha256:{SHA}",
    ]
    assert wanted["wheels"] == ["kafka_smoke-0.1.0-py3-none-any.whl", "kafka_group_source-0.1.0-py3-none-any.whl"]
    assert wanted["index"] is False


def test_only_a_package_the_operator_names_with_its_version_and_hash_comes_from_an_index():
    index = [{"name": "Kafka_Smoke", "version": "0.2.0", "sha256": "cd" * 32}]
    wanted = filters["own_requirements"](BUNDLE, ["kafka-smoke", "kafka-group-source"], index, "/w")
    assert wanted["lines"][0] == f"kafka-smoke==0.2.0 --hash=sha256:{'cd' * 32}"
    assert wanted["wheels"] == ["kafka_group_source-0.1.0-py3-none-any.whl"]
    assert wanted["index"] is True


def test_a_package_that_is_not_the_collections_own_is_refused():
    with pytest.raises(Exception, match="not one of the collection's packages"):
        filters["own_requirements"](BUNDLE, ["requests"], [], "/w")


def test_a_collection_built_without_its_packages_is_refused_saying_how_to_build_it():
    (missing,) = filters["bundle_problems"](None)
    assert "carries none of its own packages" in missing
    assert "release/build-collection.sh" in missing
    partial = {k: v for k, v in BUNDLE.items() if k != "stretch-exporter"}
    assert filters["bundle_problems"](partial) == [
        f"the collection's bundle lacks stretch-exporter; {packages.BUILD_HINT}"
    ]
    wheels = [e["wheel"] for e in BUNDLE.values() if e["wheel"] != "kafka_smoke-0.1.0-py3-none-any.whl"]
    (lacking,) = filters["bundle_problems"](BUNDLE, wheels)
    assert "names kafka_smoke-0.1.0-py3-none-any.whl for kafka-smoke, which it lacks" in lacking
    assert filters["bundle_problems"](BUNDLE, [e["wheel"] for e in BUNDLE.values()]) == []


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"name": "kafka-smoke", "version": "0.1.0"}, "sha256 must be the wheel's sha256"),
        ({"name": "kafka-smoke", "version": ">=0.1", "sha256": SHA}, "is not a pinned version"),
        ({"name": "requests", "version": "2.0", "sha256": SHA}, "is not one of the collection's packages"),
        ({"name": "kafka-smoke", "version": "0.1.0", "sha256": SHA, "url": "x"}, "unknown key(s) url"),
        ("kafka-smoke==0.1.0", "must be a mapping"),
    ],
)
def test_an_index_package_without_a_pinned_version_and_hash_is_refused_naming_its_entry(entry, problem):
    (refusal,) = filters["index_problems"]([entry])
    assert refusal.startswith("python_venv_index_packages[0]")
    assert problem in refusal


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("pyarrow", "is not pinned"),
        ("pyarrow>=11", "is not pinned"),
        ("kafka-smoke==0.1.0", "is one of the collection's own packages"),
        ("Kafka_Group.Source==0.1.0", "is one of the collection's own packages"),
        (3, "must be a string"),
    ],
)
def test_a_third_party_requirement_must_be_pinned_and_not_one_of_ours(entry, problem):
    (refusal,) = filters["requirement_problems"](["confluent-kafka==2.16.1", entry], "kafka_smoke_python_packages")
    assert refusal.startswith("kafka_smoke_python_packages[1]")
    assert problem in refusal


def test_pinned_third_party_requirements_with_extras_pass():
    assert filters["requirement_problems"](["pyspark[sql]==4.0.0", "a.b_c==1!2.0+local"], "x") == []


PINS = ["confluent-kafka==2.16.1", "pyarrow==20.0.0"]


def test_a_virtualenv_holding_every_pin_needs_nothing_installed():
    held = json.dumps({"confluent_kafka": "2.16.1", "PyArrow": "20.0.0", "pip": "24.0"})
    assert filters["requirements_missing"](PINS, held) == []
    assert filters["requirements_missing"](["Confluent.Kafka[avro]==2.16.1"], {"confluent-kafka": "2.16.1"}) == []


@pytest.mark.parametrize(
    ("held", "missing"),
    [
        ({"confluent-kafka": "2.16.1"}, ["pyarrow==20.0.0"]),  # one absent
        ({"confluent-kafka": "2.16.0", "pyarrow": "20.0.0"}, ["confluent-kafka==2.16.1"]),  # another version
        ({"confluent-kafka": "2.16.1", "pyarrow": "20.0.0.1"}, ["pyarrow==20.0.0"]),  # a longer one
        ("", PINS),  # no virtualenv yet: the read printed nothing
        ('{"confluent-kafka": "2.16.1", "pya', PINS),  # a reply cut short
        ("Traceback (most recent call last):", PINS),
        ('["confluent-kafka", "2.16.1"]', PINS),  # not an object
        (None, PINS),
    ],
)
def test_whatever_the_virtualenv_does_not_hold_as_pinned_is_installed(held, missing):
    assert filters["requirements_missing"](PINS, held) == missing


def test_an_entry_that_is_not_a_plain_pin_is_always_left_to_pip():
    held = {"pyarrow": "20.0.0"}
    assert filters["requirements_missing"](["pyarrow>=11", "pyarrow"], held) == ["pyarrow>=11", "pyarrow"]


def test_each_role_lists_every_third_party_dependency_its_own_packages_declare():
    """The own packages go in with --no-deps: their dependencies must be in the caller's pinned list."""
    callers = {
        "kafka_smoke": ("kafka_smoke_python_packages", ["kafka-smoke", "kafka-group-source"]),
        "kafka_monitoring": ("kafka_monitoring_python_packages", ["stretch-exporter"]),
        "spark_stream": ("spark_stream_python_packages", ["kafka-group-source"]),
    }
    import tomllib

    for role, (variable, own) in callers.items():
        defaults = yaml.safe_load((REPO / "roles" / role / "defaults/main.yml").read_text())
        pinned = {packages.canonical(e.split("==")[0].split("[")[0]) for e in defaults[variable]}
        assert filters["requirement_problems"](defaults[variable], variable) == []
        tasks = (REPO / "roles" / role / "tasks/main.yml").read_text()
        assert f"python_venv_own: [{', '.join(own)}]" in tasks, role
        for name in own:
            project = tomllib.loads((REPO / "packages" / name / "pyproject.toml").read_text())["project"]
            for dependency in project.get("dependencies", []):
                dep = packages.canonical(dependency.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip())
                assert dep in pinned or dep in packages.OWN, f"{role}: {name} needs {dependency}, not in {variable}"


def test_the_bundle_names_each_packages_version_wheel_and_sha256(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "kafka_smoke-0.1.0-py3-none-any.whl").write_bytes(b"wheel")
    script = REPO / "release" / "bundle.py"
    done = subprocess.run(
        [sys.executable, script, wheels, REPO / "packages/kafka-smoke/pyproject.toml"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    bundle = json.loads((wheels / "bundle.json").read_text())
    assert bundle == {
        "kafka-smoke": {
            "version": "0.1.0",
            "wheel": "kafka_smoke-0.1.0-py3-none-any.whl",
            "sha256": "ba59926159d2aa256eb8739b8da7e2b574b960e1202c6d624cbe981cef996c91",
        }
    }
    refused = subprocess.run(
        [sys.executable, script, wheels, REPO / "packages/stretch-exporter/pyproject.toml"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0
    assert "no wheel" in refused.stderr
    assert "stretch-exporter 0.1.0" in refused.stderr
