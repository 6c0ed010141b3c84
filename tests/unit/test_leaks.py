"""The secret-leak scanner on crafted output: what it must find, and what it must let pass."""

import json

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from testkit.cluster import Cluster
from testkit.leaks import key_body_lines, leaks

PASSWORD = "Zq7rT2mXk9LpW4sB"


def pem_key():
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def test_clean_output_has_no_leak(tmp_path):
    key = tmp_path / "node.key"
    key.write_text(pem_key())
    output = json.dumps({"msg": "user kafka-smoke: set its password (new)", "password": "********"})
    assert leaks(output, {"kafka-smoke": PASSWORD}, [key]) == []


def test_a_password_is_found_as_written_and_as_json_escapes_it():
    assert leaks(f"ok: [b1] => password={PASSWORD}", {"kafka-smoke": PASSWORD})[0][0] == "secret kafka-smoke"
    quoted = 'pa"ss\\word-long'
    printed = json.dumps({"args": {"password": quoted}})
    assert quoted not in printed
    assert [what for what, _ in leaks(printed, {"odd": quoted})] == ["secret odd"]


def test_the_excerpt_does_not_repeat_the_secret():
    [(_, excerpt)] = leaks(f"sasl.password={PASSWORD} end", {"kafka-smoke": PASSWORD})
    assert PASSWORD not in excerpt
    assert "<kafka-smoke>" in excerpt


@pytest.mark.parametrize("kind", ["PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY", "ENCRYPTED PRIVATE KEY"])
def test_any_pem_private_key_header_is_found(kind):
    output = json.dumps({"diff": {"after": f"-----BEGIN {kind}-----\nMIGH...\n-----END {kind}-----\n"}})
    assert [what for what, _ in leaks(output)] == ["a PEM private key header"]


def test_a_known_key_is_found_by_its_body_even_without_its_header(tmp_path):
    pem = pem_key()
    key = tmp_path / "ca.key"
    key.write_text(pem)
    body = key_body_lines(pem)
    assert body, "the key has no body line long enough to look for"
    printed = json.dumps({"stdout": "\n".join(body)})  # the header cut off, the lines JSON-escaped
    assert [what for what, _ in leaks(printed, key_files=[key])] == [f"a line of the private key in {key}"]


def test_a_certificate_is_not_taken_for_a_key():
    output = "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n"
    assert leaks(output) == []


def test_a_secret_too_short_to_look_for_is_refused():
    with pytest.raises(ValueError, match="too short"):
        leaks("anything", {"pin": "1234"})


def test_the_secrets_a_leak_test_looks_for_are_every_scram_password_and_every_dcs_spark_secret():
    users = {"kafka-verify": {"sasl.password": PASSWORD}, "kafka-load": {"sasl.password": "load-pw-0123456789"}}
    spark = {"dc1": {"secret": "dc1-spark-secret-0123456789"}, "dc2": {"secret": "dc2-spark-secret-9876543210"}}
    cluster = Cluster("hosts.yml", model={}, nodes=(), user_configs=users, spark=spark)
    assert cluster.secrets() == {
        "kafka-load's SCRAM password": "load-pw-0123456789",
        "kafka-verify's SCRAM password": PASSWORD,
        "dc1's Spark cluster secret": "dc1-spark-secret-0123456789",
        "dc2's Spark cluster secret": "dc2-spark-secret-9876543210",
    }
