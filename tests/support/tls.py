"""A throw-away certificate authority, server and client certificates for TLS tests on loopback."""

from __future__ import annotations

import datetime
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class LocalCertificates:
    """A CA (for the client to trust) and a server certificate it signed for `names`."""

    ca_pem: str
    server_cert: Path
    server_key: Path
    # The CA's own key, to sign client certificates (issue_client); never written to disk.
    ca_key: ec.EllipticCurvePrivateKey = field(repr=False, compare=False, kw_only=True)

    def ca_file(self, directory: Path) -> Path:
        """The CA certificate as a PEM file (what FORGE_TEMPORAL_TLS_CA names)."""
        path = directory / "ca.pem"
        path.write_text(self.ca_pem, encoding="ascii")
        return path

    def issue_client(self, directory: Path, name: str) -> tuple[Path, Path]:
        """A client certificate for `name` signed by this CA: (certificate file, key file)."""
        ca = x509.load_pem_x509_certificate(self.ca_pem.encode("ascii"))
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        cert = (
            _builder(subject, ca.subject, key.public_key(), datetime.datetime.now(datetime.UTC))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_usage(cert_sign=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()),
                False,
            )
            .sign(self.ca_key, hashes.SHA256())
        )
        return _write_pair(directory, name, cert, key)

    def mutual_server_context(self) -> ssl.SSLContext:
        """A server that speaks HTTP/2 (gRPC) and requires a client certificate from this CA."""
        context = self.server_context()
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cadata=self.ca_pem)
        context.set_alpn_protocols(["h2"])
        return context

    def client_context(self) -> ssl.SSLContext:
        """Verifies certificates and host names like the default context, trusting only this CA."""
        context = ssl.create_default_context(cadata=self.ca_pem)
        assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
        return context

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.server_cert, self.server_key)
        return context


def make_certificates(directory: Path, names: list[str]) -> LocalCertificates:
    """A CA and a server certificate for DNS `names`, valid from an hour ago for a day."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Forge test CA")])
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    cert = (
        _builder(subject, ca_name, key.public_key(), now)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    server_cert, server_key = _write_pair(directory, "server", cert, key)
    ca_pem = ca.public_bytes(serialization.Encoding.PEM).decode("ascii")
    return LocalCertificates(ca_pem, server_cert, server_key, ca_key=ca_key)


def _write_pair(
    directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> tuple[Path, Path]:
    cert_path, key_path = directory / f"{stem}.pem", directory / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    now: datetime.datetime,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )
