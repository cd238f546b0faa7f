"""The hub's self-signed TLS certificate, made once and kept in the data dir.

No CA will sign a certificate for a 192.168.x.y address, so phones trust this one by pinning its
SHA-256 fingerprint (carried in the pairing QR code and the mDNS TXT record) instead of a chain.
That only works if the certificate never changes: it is generated once, valid for ten years, and
reused on every start; a changed LAN address does not matter because the pin, not the SAN, is
what a phone checks. The private key is written 0600 and never leaves the data dir.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

log = logging.getLogger(__name__)

TLS_DIR = "tls"
VALID_DAYS = 3650


@dataclass(frozen=True)
class Certificate:
    cert_path: Path
    key_path: Path
    fingerprint: str  # SHA-256 of the DER certificate, lowercase hex

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_path, self.key_path)
        return context


def fingerprint_of(cert: x509.Certificate) -> str:
    return cert.fingerprint(hashes.SHA256()).hex()


def local_fingerprint(home: Path) -> str | None:
    """The fingerprint of this hub's certificate, read from its data dir (None before the first
    TLS start): how a client on the same machine pins the hub without a CA."""
    cert_path = home / TLS_DIR / "cert.pem"
    try:
        return fingerprint_of(x509.load_pem_x509_certificate(cert_path.read_bytes()))
    except (OSError, ValueError):
        return None


def ensure_certificate(home: Path, name: str, lan_ip: str | None, hostname: str) -> Certificate:
    """The certificate in ``home/tls``, generated on first use (CN = the hub's name, SAN = the
    LAN IP, the hostname, localhost and 127.0.0.1)."""
    directory = home / TLS_DIR
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    if cert_path.exists() and key_path.exists():
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        if key_path.stat().st_mode & 0o077:
            key_path.chmod(0o600)
        return Certificate(cert_path, key_path, fingerprint_of(cert))
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _self_signed(key, name, lan_ip, hostname)
    _write_private(key_path, key)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    fingerprint = fingerprint_of(cert)
    log.info("made a TLS certificate for %r in %s (SHA-256 %s)", name, directory, fingerprint)
    return Certificate(cert_path, key_path, fingerprint)


def _self_signed(
    key: ec.EllipticCurvePrivateKey, name: str, lan_ip: str | None, hostname: str
) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name[:64] or "tiny-hub")])
    alt: list[x509.GeneralName] = [
        x509.DNSName(hostname or "localhost"),
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")),
    ]
    if lan_ip:
        alt.insert(0, x509.IPAddress(ipaddress.ip_address(lan_ip)))
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )


def _write_private(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    """Created 0600 from the start, through a temporary file: never world-readable, never half
    written."""
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, pem)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
