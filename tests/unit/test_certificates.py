"""Whether a node's certificate must be issued again, on certificates made here."""

import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.stretch.kafka.plugins.module_utils.certificates import problems, subject_alt_names

NOW = datetime.datetime(2026, 11, 21, tzinfo=datetime.UTC)


def make(subject, issuer_key, issuer_name=None, sans=(), days=365, start=NOW, ca=False):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name or name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    cert = builder.sign(issuer_key or key, hashes.SHA256())
    return cert, key


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM).decode()


CA, CA_KEY = make("stretch-ca", None, ca=True, days=3650)
OTHER_CA, OTHER_KEY = make("stretch-ca", None, ca=True, days=3650)
NAMES = ["dc1-broker1", "10.91.1.11"]
GOOD_SANS = [x509.DNSName("dc1-broker1"), x509.IPAddress(__import__("ipaddress").ip_address("10.91.1.11"))]


def node_cert(**kw):
    defaults = {"subject": "dc1-broker1", "issuer_key": CA_KEY, "issuer_name": CA.subject, "sans": GOOD_SANS}
    return pem(make(**(defaults | kw))[0])


def test_a_good_certificate_needs_nothing():
    assert problems(node_cert(), pem(CA), "dc1-broker1", NAMES, now=NOW) == []


def test_every_reason_to_issue_again_is_named():
    assert problems("", pem(CA), "dc1-broker1", NAMES, now=NOW) == ["there is no certificate"]
    assert problems(node_cert(issuer_key=OTHER_KEY), pem(CA), "dc1-broker1", NAMES, now=NOW) == [
        "it is not signed by the current CA (InvalidSignature)"
    ]
    assert problems(node_cert(subject="x"), pem(CA), "dc1-broker1", NAMES, now=NOW) == [
        "its subject CN is ['x'], the principal is 'dc1-broker1'"
    ]
    assert problems(node_cert(sans=GOOD_SANS[:1]), pem(CA), "dc1-broker1", NAMES, now=NOW) == [
        "its alternative names lack IP:10.91.1.11"
    ]
    assert problems(node_cert(days=10), pem(CA), "dc1-broker1", NAMES, now=NOW) == [
        "it expires on 2026-12-01 (renewed 30 days ahead)"
    ]


def test_names_split_into_dns_names_and_addresses():
    assert subject_alt_names(["dc1-broker1", "10.91.1.11", "dc1-broker1", "", "fe80::1"]) == [
        "DNS:dc1-broker1",
        "IP:10.91.1.11",
        "IP:fe80::1",
    ]
