"""Whether a certificate must be issued again, judged on the Ansible controller.

A node's certificate is good when the CA that signs now has signed it, its
subject names the node's principal, its subject alternative names cover
every name and address the node is reached by, and it does not expire within
the renewal window. Anything else, or no certificate at all, is a reason to
issue one again; the reasons are returned as messages. Needs the Python
cryptography package where it runs (Ansible's own dependency).
"""

from __future__ import annotations

import datetime
import ipaddress


def subject_alt_names(names):
    """Split the names a node is reached by into (DNS names, IP addresses), in community.crypto's spelling."""
    dns, ips = [], []
    for name in dict.fromkeys(str(n) for n in names if n):
        try:
            ips.append(str(ipaddress.ip_address(name)))
        except ValueError:
            dns.append(name)
    return [f"DNS:{n}" for n in dns] + [f"IP:{a}" for a in ips]


def problems(cert_pem, ca_pem, common_name, names, renew_days=30, now=None):
    """Why cert_pem must be issued again (empty when it is good).

    ca_pem: the certificate of the CA that signs now. names: every DNS name
    and address the node is reached by.
    """
    from cryptography import x509  # noqa: PLC0415  only where certificates are judged
    from cryptography.x509.oid import NameOID  # noqa: PLC0415

    if not cert_pem or "BEGIN CERTIFICATE" not in cert_pem:
        return ["there is no certificate"]
    try:
        cert = x509.load_pem_x509_certificate(cert_pem.encode())
        ca = x509.load_pem_x509_certificate(ca_pem.encode())
    except ValueError as exc:
        return [f"the certificate cannot be read: {exc}"]
    found = []
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, Exception) as exc:  # noqa: BLE001  InvalidSignature and friends
        found.append(f"it is not signed by the current CA ({type(exc).__name__})")
    cns = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    if cns != [common_name]:
        found.append(f"its subject CN is {cns}, the principal is {common_name!r}")
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        have = {f"DNS:{n}" for n in sans.get_values_for_type(x509.DNSName)}
        have |= {f"IP:{a}" for a in sans.get_values_for_type(x509.IPAddress)}
    except x509.ExtensionNotFound:
        have = set()
    missing = [n for n in subject_alt_names(names) if n not in have]
    if missing:
        found.append(f"its alternative names lack {', '.join(missing)}")
    now = now or datetime.datetime.now(datetime.UTC)
    if cert.not_valid_before_utc > now:
        found.append(f"it is not valid before {cert.not_valid_before_utc:%Y-%m-%d %H:%M} UTC")
    if cert.not_valid_after_utc - now < datetime.timedelta(days=renew_days):
        found.append(f"it expires on {cert.not_valid_after_utc:%Y-%m-%d} (renewed {renew_days} days ahead)")
    return found


def expiry(cert_pem):
    """The certificate's notAfter as epoch seconds (for the expiry alert)."""
    from cryptography import x509  # noqa: PLC0415

    return x509.load_pem_x509_certificate(cert_pem.encode()).not_valid_after_utc.timestamp()
