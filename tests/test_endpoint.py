"""Dialling an endpoint device (docs/protocol.md, endpoint devices) against real HTTPS servers on
127.0.0.1.

Every test runs under `no_network`: a connection or name lookup beyond loopback fails it. URLs
that must be refused are first shown to be refused by `check_endpoint_url` (the structural
check, which sends nothing), and only then handed to the client, which must refuse them before
connecting: quickly, with no request reaching the live loopback server whose port they name.
The one name that is not loopback (robot.example.test) is answered by a fake resolver.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import logging
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from hub.devices.endpoint import (
    EndpointClient,
    EndpointError,
    EndpointPolicy,
    EndpointRefused,
    check_endpoint_url,
)
from tests.conftest import StartHub

SECRET = "s3cr3t-Bearer-Value-0xC0FFEE"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(92)
JPEG = b"\xff\xd8\xff\xe0" + bytes(60)
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + bytes(40)
TELEMETRY = {"battery": 87, "state": "docked", "sensors": [1.5, 2.5]}
FAKE_NAME = "robot.example.test"  # answered by the fake resolver below, never by real DNS


# -- a certificate for 127.0.0.1, localhost and the fake name -----------------------------------


@dataclass(frozen=True)
class Tls:
    server: ssl.SSLContext
    client: ssl.SSLContext  # trusts exactly our self-signed certificate


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    folder: Path = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tiny endpoint test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.DNSName("localhost"),
                    x509.DNSName(FAKE_NAME),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_path, key_path)
    client = ssl.create_default_context(cafile=str(cert_path))
    return Tls(server=server, client=client)


# -- the device: a real aiohttp HTTPS server with the contract's three routes ---


@dataclass
class Hit:
    method: str
    path: str
    authorization: str | None
    host: str


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Device:
    """An endpoint device on a free loopback port. `routes` overrides a path's handler."""

    tls: Tls
    hits: list[Hit] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    routes: dict[str, Handler] = field(default_factory=dict)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0
    _runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    async def start(self) -> None:
        @web.middleware
        async def bearer(request: web.Request, handler: Handler) -> web.StreamResponse:
            auth = request.headers.get("Authorization")
            self.hits.append(Hit(request.method, request.path, auth, request.host))
            if auth != f"Bearer {SECRET}":
                return web.json_response({"error": "unauthorized"}, status=401)
            override = self.routes.get(request.path)
            return await (override or handler)(request)

        async def telemetry(request: web.Request) -> web.Response:
            return web.json_response(TELEMETRY)

        async def chat(request: web.Request) -> web.Response:
            prompt = (await request.json())["prompt"]
            self.prompts.append(prompt)
            form, _, words = prompt.partition(":")
            if form == "plain":
                return web.Response(text=f"plain {words}")
            return web.json_response({form: f"{form} {words}"})

        async def snapshot(request: web.Request) -> web.Response:
            return web.Response(body=PNG, content_type="image/png")

        app = web.Application(middlewares=[bearer])
        app.router.add_get("/api/telemetry", telemetry)
        app.router.add_post("/api/chat", chat)
        app.router.add_get("/api/camera/snapshot", snapshot)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.tls.server).start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        self.release.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def hang(self) -> None:
        await self.release.wait()


@pytest.fixture(autouse=True)
def _loopback_only(no_network: list[str]) -> Iterator[None]:
    yield
    assert no_network == [], f"traffic beyond loopback was attempted: {no_network}"


@pytest.fixture
async def device(tls: Tls) -> AsyncIterator[Device]:
    server = Device(tls)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def other(tls: Tls) -> AsyncIterator[Device]:
    """A second device: where a redirect would send our bearer."""
    server = Device(tls)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def policy(tls: Tls) -> EndpointPolicy:
    return EndpointPolicy(allow_private=("127.0.0.1",), ssl_context=tls.client)


@pytest.fixture
def client(policy: EndpointPolicy) -> EndpointClient:
    return EndpointClient(policy)


@dataclass
class FakeDns:
    answers: list[str]
    lookups: list[str] = field(default_factory=list)


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch, no_network: list[str]) -> FakeDns:
    """robot.example.test resolves to the next of `answers` (the last one repeats); any other
    name goes to the (loopback-only) real resolver."""
    fake = FakeDns(answers=["127.0.0.1"])
    real = socket.getaddrinfo  # already wrapped by no_network

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != FAKE_NAME:
            return real(host, port, *args, **kwargs)
        fake.lookups.append(host)
        address = fake.answers.pop(0) if len(fake.answers) > 1 else fake.answers[0]
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return fake


async def refused_at_call(client: EndpointClient, url: str) -> str:
    """Every route refuses `url` at once, before connecting; returns the telemetry message."""
    messages = []
    for call in (
        client.telemetry(url, SECRET),
        client.chat(url, SECRET, "hello"),
        client.snapshot(url, SECRET),
    ):
        with pytest.raises(EndpointRefused) as caught:  # refused, not a failed connection
            await call
        messages.append(str(caught.value))
    return messages[0]


# -- the three routes ------------------------------------------------------------------------


async def test_telemetry_is_the_devices_json(device: Device, client: EndpointClient) -> None:
    assert await client.telemetry(device.url, SECRET) == TELEMETRY
    assert [(h.method, h.path, h.authorization) for h in device.hits] == [
        ("GET", "/api/telemetry", f"Bearer {SECRET}")
    ]


@pytest.mark.parametrize(
    ("form", "reply"),
    [
        ("reply", "reply status?"),
        ("result", "result status?"),
        ("text", "text status?"),
        ("plain", "plain status?"),
    ],
)
async def test_chat_reads_every_reply_form(
    device: Device, client: EndpointClient, form: str, reply: str
) -> None:
    assert await client.chat(device.url, SECRET, f"{form}:status?") == reply
    assert device.prompts == [f"{form}:status?"]
    assert [(h.method, h.path) for h in device.hits] == [("POST", "/api/chat")]


async def test_chat_prefers_reply_then_result_then_text(
    device: Device, client: EndpointClient
) -> None:
    async def several(request: web.Request) -> web.Response:
        return web.json_response({"text": "t", "result": {"n": 1}, "reply": None})

    device.routes["/api/chat"] = several
    assert await client.chat(device.url, SECRET, "x") == '{"n": 1}'


async def test_an_empty_chat_answer_is_an_error(device: Device, client: EndpointClient) -> None:
    async def empty(request: web.Request) -> web.Response:
        return web.Response(text="  ")

    device.routes["/api/chat"] = empty
    with pytest.raises(EndpointError, match="sent an empty answer to POST /api/chat"):
        await client.chat(device.url, SECRET, "x")


async def test_a_snapshot_is_returned_with_our_content_type(
    device: Device, client: EndpointClient
) -> None:
    assert await client.snapshot(device.url, SECRET) == (PNG, "image/png")
    assert device.hits[0].path == "/api/camera/snapshot"


@pytest.mark.parametrize(
    ("header", "body", "canonical"),
    [
        ("image/PNG; charset=x", PNG, "image/png"),
        ("IMAGE/JPEG", JPEG, "image/jpeg"),
        ("image/jpg", JPEG, "image/jpeg"),
        ("image/webp;q=1", WEBP, "image/webp"),
    ],
)
async def test_the_snapshot_type_is_canonical_never_the_devices_header(
    device: Device, client: EndpointClient, header: str, body: bytes, canonical: str
) -> None:
    async def image(request: web.Request) -> web.Response:
        return web.Response(body=body, headers={"Content-Type": header})

    device.routes["/api/camera/snapshot"] = image
    data, content_type = await client.snapshot(device.url, SECRET)
    assert (data, content_type) == (body, canonical)
    assert content_type is not header


@pytest.mark.parametrize(
    ("header", "body", "phrase"),
    [
        ("text/html", b"<html>hi</html>", "sent text/html for GET /api/camera/snapshot"),
        ("application/octet-stream", PNG, "sent application/octet-stream"),
        ("image/svg+xml", b"<svg/>", "not a PNG, JPEG or WebP still image"),
        ("image/png", b"<html>not a png</html>", "the bytes are not a PNG image"),
        ("image/jpeg", PNG, "the bytes are not a JPEG image"),
    ],
)
async def test_a_snapshot_of_the_wrong_type_is_refused(
    device: Device, client: EndpointClient, header: str, body: bytes, phrase: str
) -> None:
    async def wrong(request: web.Request) -> web.Response:
        return web.Response(body=body, headers={"Content-Type": header})

    device.routes["/api/camera/snapshot"] = wrong
    with pytest.raises(EndpointError) as caught:
        await client.snapshot(device.url, SECRET)
    assert phrase in str(caught.value)
    assert not isinstance(caught.value, EndpointRefused)


async def test_a_multipart_stream_is_refused_without_waiting_for_it(
    device: Device, client: EndpointClient
) -> None:
    async def mjpeg(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "multipart/x-mixed-replace; boundary=frame"}
        )
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            await response.write(b"--frame\r\nContent-Type: image/jpeg\r\n\r\n" + JPEG)
            await device.hang()  # a camera feed never ends
        return response

    device.routes["/api/camera/snapshot"] = mjpeg
    with pytest.raises(EndpointError, match="multipart stream"):  # not "did not answer"
        await client.snapshot(device.url, SECRET)


async def test_an_oversize_snapshot_is_refused_without_reading_it_all(
    device: Device, client: EndpointClient
) -> None:
    client.SNAPSHOT_MAX = 1000

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "image/png"})
        await response.prepare(request)  # chunked: no length announced
        with contextlib.suppress(ConnectionError):
            await response.write(PNG + bytes(4000))
            await device.hang()  # the rest never comes: reading it all would time out
        return response

    device.routes["/api/camera/snapshot"] = endless
    with pytest.raises(EndpointError) as caught:
        await client.snapshot(device.url, SECRET)
    assert str(caught.value) == (
        f"the device at {device.url} sent more than 1000 bytes for GET /api/camera/snapshot"
    )


async def test_an_announced_oversize_snapshot_is_refused_before_reading(
    device: Device, client: EndpointClient
) -> None:
    client.SNAPSHOT_MAX = 1000

    async def announced(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "image/png"})
        response.content_length = 9_000_000
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            await response.write(PNG)
            await device.hang()
        return response

    device.routes["/api/camera/snapshot"] = announced
    with pytest.raises(EndpointError, match=r"more than 1000 bytes .*\(9000000 announced\)"):
        await client.snapshot(device.url, SECRET)


async def test_a_snapshot_at_the_limit_is_fine(device: Device, client: EndpointClient) -> None:
    client.SNAPSHOT_MAX = len(PNG)
    assert await client.snapshot(device.url, SECRET) == (PNG, "image/png")


# -- credentials -----------------------------------------------------------------------------


async def test_no_bearer_is_reported_as_a_rejected_credential(
    device: Device, client: EndpointClient
) -> None:
    with pytest.raises(EndpointError) as caught:
        await client.telemetry(device.url, "")
    assert "device rejected our credential" in str(caught.value)
    assert "HTTP 401" in str(caught.value)
    assert [h.authorization for h in device.hits] == [None]


async def test_a_wrong_secret_is_reported_as_a_rejected_credential(
    device: Device, client: EndpointClient
) -> None:
    for call in (
        client.telemetry(device.url, "not-the-secret"),
        client.chat(device.url, "not-the-secret", "hi"),
        client.snapshot(device.url, "not-the-secret"),
    ):
        with pytest.raises(EndpointError, match="device rejected our credential"):
            await call
    assert [h.authorization for h in device.hits] == ["Bearer not-the-secret"] * 3


async def test_403_is_reported_as_a_rejected_credential(
    device: Device, client: EndpointClient
) -> None:
    async def forbidden(request: web.Request) -> web.Response:
        return web.Response(status=403, text="not you")

    device.routes["/api/telemetry"] = forbidden
    with pytest.raises(EndpointError) as caught:
        await client.telemetry(device.url, SECRET)
    assert str(caught.value) == (
        f"device rejected our credential: the device at {device.url} answered HTTP 403 to "
        "GET /api/telemetry; check the secret enrolled for it"
    )


async def test_a_secret_that_cannot_be_a_header_is_not_sent(
    device: Device, client: EndpointClient
) -> None:
    with pytest.raises(EndpointError, match="cannot travel in an Authorization header"):
        await client.telemetry(device.url, "abc\r\nX-Evil: 1")
    assert device.hits == []


# -- redirects -------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [300, 301, 302, 303, 307, 308])
async def test_a_redirect_is_refused_and_never_followed(
    device: Device, other: Device, client: EndpointClient, status: int
) -> None:
    async def redirect(request: web.Request) -> web.Response:
        return web.Response(status=status, headers={"Location": f"{other.url}/api/telemetry"})

    device.routes["/api/telemetry"] = redirect
    with pytest.raises(EndpointRefused) as caught:
        await client.telemetry(device.url, SECRET)
    message = str(caught.value)
    assert message.startswith(f"refused: the device at {device.url} answered GET /api/telemetry")
    assert f"with a redirect (HTTP {status} to {other.url}/api/telemetry)" in message
    assert "never followed" in message
    assert len(device.hits) == 1
    assert other.hits == []


# -- URLs refused by their form: at enrollment and at call time ------------------------------


def test_check_endpoint_url_normalises() -> None:
    assert (
        check_endpoint_url("  HTTPS://Robot.Example.COM/api/  ") == "https://robot.example.com/api"
    )
    assert check_endpoint_url("https://robot.example.com:443/") == "https://robot.example.com"
    assert check_endpoint_url("https://robot.example.com:8443") == "https://robot.example.com:8443"
    assert check_endpoint_url("https://Bücher.example/x/") == "https://xn--bcher-kva.example/x"
    allowed = EndpointPolicy(allow_private=("192.168.1.0/24", "fd00::/8"))
    assert check_endpoint_url("https://192.168.1.20:8443/", allowed) == "https://192.168.1.20:8443"
    assert check_endpoint_url("https://[fd00::5]/", allowed) == "https://[fd00::5]"


@pytest.mark.parametrize(
    ("url", "phrase"),
    [
        ("http://robot.example.com", "only dialled over https://"),
        ("ftp://robot.example.com", "only dialled over https://"),
        ("robot.example.com/api", "only dialled over https://"),
        ("https://user:pw@robot.example.com", "user name or password"),
        ("https://robot.example.com/?a=1", "query or a fragment"),
        ("https://robot.example.com/#x", "query or a fragment"),
        ("https://", "no host"),
        ("", "empty"),
        ("https://robot .example.com", "spaces or control characters"),
        ("https://robot.example.com\r\n/x", "spaces or control characters"),
        ("https://rob*t.example.com", "not a valid host name"),
        ("https://-robot.example.com", "not a valid host name"),
        ("https://robot.example.com:0", "port 0"),
    ],
)
def test_malformed_urls_are_refused(url: str, phrase: str) -> None:
    with pytest.raises(EndpointRefused) as caught:
        check_endpoint_url(url)
    assert str(caught.value).startswith("refused: ")
    assert phrase in str(caught.value)


async def test_http_is_refused_before_any_connection(
    device: Device, client: EndpointClient
) -> None:
    url = f"http://127.0.0.1:{device.port}"
    with pytest.raises(EndpointRefused, match="only dialled over https://"):
        check_endpoint_url(url, client.policy)
    assert "https://" in await refused_at_call(client, url)
    assert device.hits == []


# Every way to spell this machine as an IP literal. With the live server's port, any of these
# that slipped through would reach it: the assertion on device.hits would catch it.
LOOPBACK_SPELLINGS = [
    "2130706433",
    "017700000001",
    "0177.0.0.1",
    "0177.0000.0000.0001",
    "127.000.000.001",
    "0x7f.1",
    "0x7f.0.0.1",
    "0X7F000001",
    "0x7f000001",
    "127.1",
    "127.0.1",
    "127.0.0.1.",
    "127.0.0.1.1",
    "%31%32%37.0.0.1",
    "１２７.０.０.１",  # full-width digits, which IDNA maps to 127.0.0.1
    "[::1]",
    "[0:0:0:0:0:0:0:1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[0:0:0:0:0:ffff:7f00:1]",
    "[64:ff9b::7f00:1]",
    "[::127.0.0.1]",
    "[fe80::1%25lo]",
    "0",
    "0.0.0.0",
    "[::]",
]


@pytest.mark.parametrize("spelling", LOOPBACK_SPELLINGS)
async def test_ip_literals_in_any_encoding_are_refused(
    device: Device, client: EndpointClient, spelling: str
) -> None:
    url = f"https://{spelling}:{device.port}/"
    # refused even though the owner allowed 127.0.0.1 (client.policy): odd spellings never pass
    for policy in (EndpointPolicy(), client.policy):
        with pytest.raises(EndpointRefused):
            check_endpoint_url(url, policy)
    message = await refused_at_call(client, url)
    assert message.startswith("refused: ")
    assert device.hits == []


@pytest.mark.parametrize(
    ("host", "phrase"),
    [
        ("8.8.8.8", "8.8.8.8 is an IP address; enroll the device by its https host name"),
        ("[2606:4700:4700::1111]", "is an IP address; enroll the device by its https host name"),
        ("10.0.0.1", "10.0.0.1 is a private address; the hub's owner can allow"),
        ("192.168.1.1", "192.168.1.1 is a private address"),
        ("172.16.0.1", "172.16.0.1 is a private address"),
        ("100.64.0.1", "100.64.0.1 is a shared (carrier-grade NAT) address"),
        ("169.254.1.1", "169.254.1.1 is a link-local address"),
        ("169.254.169.254", "169.254.169.254 is a cloud metadata address, which is never dialled"),
        ("[fd00:ec2::254]", "fd00:ec2::254 is a cloud metadata address, which is never dialled"),
        ("[fd12:3456::1]", "fd12:3456::1 is a private address"),
        ("[fe80::1]", "fe80::1 is a link-local address"),
        ("224.0.0.1", "224.0.0.1 is a multicast address, which is never dialled"),
        ("240.0.0.1", "240.0.0.1 is a private address"),
        ("0xa9fea9fe", "in an unusual notation"),
        ("0251.0376.0251.0376", "in an unusual notation"),
    ],
)
async def test_other_ip_literals_are_refused_without_traffic(
    client: EndpointClient, host: str, phrase: str
) -> None:
    url = f"https://{host}/"
    with pytest.raises(EndpointRefused) as caught:
        check_endpoint_url(url, client.policy)  # stops the test before any traffic
    assert phrase in str(caught.value)
    assert phrase in await refused_at_call(client, url)


@pytest.mark.parametrize(
    ("host", "phrase"),
    [
        ("localhost", "localhost is this machine (a loopback name)"),
        ("LocalHost.", "localhost. is this machine (a loopback name)"),
        ("api.localhost", "api.localhost is this machine"),
        ("printer.local", "printer.local is a .local (mDNS) name"),
        ("robot.internal", "robot.internal is an .internal name"),
        ("metadata.google.internal", "is an .internal name"),
        ("robot", "robot has no dot"),
        ("robot.", "robot. has no dot"),
    ],
)
async def test_local_names_are_refused(
    device: Device, client: EndpointClient, host: str, phrase: str
) -> None:
    url = f"https://{host}:{device.port}/"
    with pytest.raises(EndpointRefused) as caught:
        check_endpoint_url(url, client.policy)
    assert phrase in str(caught.value)
    assert "devices.allow_private" in str(caught.value)
    assert phrase in await refused_at_call(client, url)
    assert device.hits == []


# -- addresses: refused unless the owner allowed them ----------------------------------------


async def test_loopback_is_refused_unless_allowed(device: Device, tls: Tls) -> None:
    client = EndpointClient(EndpointPolicy(ssl_context=tls.client))
    message = await refused_at_call(client, device.url)
    assert message == (
        "refused: 127.0.0.1 is a loopback address; "
        "the hub's owner can allow a private host or range in devices.allow_private"
    )
    assert device.hits == []


async def test_a_cidr_range_allows_its_addresses(device: Device, tls: Tls) -> None:
    client = EndpointClient(EndpointPolicy(allow_private=("127.0.0.0/8",), ssl_context=tls.client))
    assert await client.telemetry(device.url, SECRET) == TELEMETRY
    other_range = EndpointClient(
        EndpointPolicy(allow_private=("10.0.0.0/8", "::1/128"), ssl_context=tls.client)
    )
    assert "loopback" in await refused_at_call(other_range, device.url)
    assert len(device.hits) == 1


async def test_a_named_host_is_allowed_by_name(device: Device, tls: Tls) -> None:
    url = f"https://localhost:{device.port}"
    client = EndpointClient(EndpointPolicy(allow_private=("LOCALHOST",), ssl_context=tls.client))
    assert check_endpoint_url(url, client.policy) == url
    assert await client.telemetry(url, SECRET) == TELEMETRY
    assert device.hits[0].host == f"localhost:{device.port}"
    # allowing the name does not allow the address, nor the other way round
    assert "loopback" in await refused_at_call(client, device.url)
    by_address = EndpointClient(
        EndpointPolicy(allow_private=("127.0.0.1",), ssl_context=tls.client)
    )
    assert "loopback name" in await refused_at_call(by_address, url)
    assert len(device.hits) == 1


async def test_a_public_name_that_resolves_to_a_private_address_is_refused(
    device: Device, tls: Tls, fake_dns: FakeDns
) -> None:
    client = EndpointClient(EndpointPolicy(ssl_context=tls.client))  # nothing private allowed
    url = f"https://{FAKE_NAME}:{device.port}"
    assert check_endpoint_url(url, client.policy) == url  # the name itself is fine
    message = await refused_at_call(client, url)
    assert message == (
        f"refused: {FAKE_NAME} resolves to 127.0.0.1, a loopback address; "
        "the hub's owner can allow a private host or range in devices.allow_private"
    )
    assert device.hits == []

    # The policy below allows the name and every range, yet never the metadata address: shown
    # first on the literal (no traffic), then on the name that resolves to it.
    fake_dns.answers = ["169.254.169.254"]
    allow_all = EndpointClient(
        EndpointPolicy(
            allow_private=(FAKE_NAME, "0.0.0.0/0"), ssl_context=client.policy.ssl_context
        )
    )
    with pytest.raises(EndpointRefused, match="never dialled"):
        check_endpoint_url("https://169.254.169.254/", allow_all.policy)
    assert "cloud metadata address, which is never dialled" in await refused_at_call(allow_all, url)


async def test_the_connection_goes_to_the_checked_address(
    device: Device, tls: Tls, fake_dns: FakeDns
) -> None:
    # The first answer is checked and pinned; a rebinding answer (10.0.0.1) comes too late.
    fake_dns.answers = ["127.0.0.1", "10.0.0.1"]
    client = EndpointClient(EndpointPolicy(allow_private=("127.0.0.0/8",), ssl_context=tls.client))
    url = f"https://{FAKE_NAME}:{device.port}"
    with pytest.raises(EndpointRefused, match=r"10\.0\.0\.1 is a private address"):
        check_endpoint_url("https://10.0.0.1/", client.policy)  # the second answer is refused
    assert await client.telemetry(url, SECRET) == TELEMETRY
    assert fake_dns.lookups == [FAKE_NAME]  # resolved once, by the guard, never by aiohttp
    assert device.hits[0].host == f"{FAKE_NAME}:{device.port}"  # Host (and SNI) stay the name

    # The next call resolves again and sees the private answer: refused, nothing sent.
    assert "resolves to 10.0.0.1, a private address" in await refused_at_call(client, url)
    assert len(device.hits) == 1


def test_a_bad_range_in_the_policy_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"devices\.allow_private: '10\.0\.0\.0/33'"):
        EndpointPolicy(allow_private=("10.0.0.0/33",))
    with pytest.raises(ValueError, match="standard notation"):
        EndpointPolicy(allow_private=("127.1",))


# -- failures --------------------------------------------------------------------------------


async def test_a_slow_device_times_out_with_the_budget(
    device: Device, client: EndpointClient
) -> None:
    async def slow(request: web.Request) -> web.Response:
        await device.hang()
        return web.json_response({})

    device.routes["/api/telemetry"] = slow
    device.routes["/api/chat"] = slow
    client.TELEMETRY_S = 0.3
    client.CHAT_S = 0.4
    with pytest.raises(EndpointError) as caught:
        await client.telemetry(device.url, SECRET)
    assert str(caught.value) == (
        f"the device at {device.url} did not answer within 0.3 s (GET /api/telemetry)"
    )
    with pytest.raises(EndpointError, match=r"did not answer within 0\.4 s \(POST /api/chat\)"):
        await client.chat(device.url, SECRET, "hi")
    assert EndpointClient.TELEMETRY_S == 20.0  # lowered on the instance only


async def test_a_closed_port_is_a_refused_connection(
    client: EndpointClient, closed_port: int
) -> None:
    url = f"https://127.0.0.1:{closed_port}"
    with pytest.raises(EndpointError) as caught:
        await client.telemetry(url, SECRET)
    assert str(caught.value) == (
        f"the device at {url} refused the connection: nothing is listening there"
    )


async def test_an_untrusted_certificate_is_a_tls_failure(device: Device) -> None:
    client = EndpointClient(EndpointPolicy(allow_private=("127.0.0.1",)))  # default trust
    with pytest.raises(EndpointError) as caught:
        await client.telemetry(device.url, SECRET)
    message = str(caught.value)
    assert message.startswith(
        f"could not make a trusted TLS connection to the device at {device.url}"
    )
    assert "self-signed" in message or "certificate" in message
    assert device.hits == []  # the request (and the bearer) never left


async def test_telemetry_that_is_not_json_is_an_error(
    device: Device, client: EndpointClient
) -> None:
    for body in ("<html>status</html>", "", '{"battery": NaN}'):

        async def not_json(request: web.Request, body: str = body) -> web.Response:
            return web.Response(text=body, content_type="application/json")

        device.routes["/api/telemetry"] = not_json
        with pytest.raises(EndpointError) as caught:
            await client.telemetry(device.url, SECRET)
        assert str(caught.value) == f"the device at {device.url} sent telemetry that is not JSON"


async def test_other_error_statuses_are_reported_with_the_status(
    device: Device, client: EndpointClient
) -> None:
    async def broken(request: web.Request) -> web.Response:
        return web.Response(status=503, reason="Warming Up", text="later")

    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404)

    device.routes["/api/telemetry"] = broken
    device.routes["/api/chat"] = missing
    with pytest.raises(EndpointError) as caught:
        await client.telemetry(device.url, SECRET)
    assert str(caught.value) == (
        f"the device at {device.url} answered HTTP 503 Warming Up to GET /api/telemetry"
    )
    with pytest.raises(EndpointError, match="answered HTTP 404 Not Found to POST /api/chat"):
        await client.chat(device.url, SECRET, "hi")


async def test_a_large_text_answer_is_capped(device: Device, client: EndpointClient) -> None:
    client.TEXT_MAX = 100

    async def long(request: web.Request) -> web.Response:
        return web.Response(text="x" * 1000)

    device.routes["/api/chat"] = long
    with pytest.raises(EndpointError, match="sent more than 100 bytes for POST /api/chat"):
        await client.chat(device.url, SECRET, "hi")


# -- the secret stays secret -----------------------------------------------------------------


async def test_the_secret_never_appears_in_an_error_or_a_log_line(
    device: Device,
    client: EndpointClient,
    tls: Tls,
    closed_port: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)

    async def leak_redirect(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": f"https://x.example/?k={SECRET}"})

    async def leak_status(request: web.Request) -> web.Response:
        return web.Response(status=500, reason=f"bad {SECRET}")

    async def leak_type(request: web.Request) -> web.Response:
        return web.Response(body=PNG, headers={"Content-Type": f"text/{SECRET}"})

    async def slow(request: web.Request) -> web.Response:
        await device.hang()
        return web.json_response({})

    device.routes["/api/telemetry"] = leak_redirect
    device.routes["/api/chat"] = leak_status
    device.routes["/api/camera/snapshot"] = leak_type
    client.SNAPSHOT_S = 5.0
    untrusted = EndpointClient(EndpointPolicy(allow_private=("127.0.0.1",)))
    failing: list[Awaitable[Any]] = [
        client.telemetry(device.url, SECRET),
        client.chat(device.url, SECRET, "hi"),
        client.snapshot(device.url, SECRET),
        client.telemetry(f"https://127.0.0.1:{closed_port}", SECRET),
        client.telemetry("https://localhost/", SECRET),
        client.telemetry(f"http://{SECRET}.example.com/", SECRET),
        untrusted.telemetry(device.url, SECRET),
    ]
    errors: list[EndpointError] = []
    for call in failing:
        with pytest.raises(EndpointError) as caught:
            await call
        errors.append(caught.value)

    device.routes["/api/telemetry"] = slow
    client.TELEMETRY_S = 0.2
    with pytest.raises(EndpointError) as caught:
        await client.telemetry(device.url, SECRET)
    errors.append(caught.value)

    del device.routes["/api/telemetry"]
    client.TELEMETRY_S = 5.0
    assert await client.telemetry(f"{device.url}/", SECRET) == TELEMETRY

    for error in errors:
        assert SECRET.lower() not in str(error).lower()
        assert SECRET.lower() not in repr(error.args).lower()
        assert error.__cause__ is None and error.__context__ is None
    assert "[secret]" in str(errors[0])  # the redirect's Location was scrubbed, not dropped
    assert len(caplog.records) >= len(errors)
    assert SECRET.lower() not in caplog.text.lower()
    for record in caplog.records:
        assert SECRET.lower() not in record.getMessage().lower()


# --- an endpoint device enrolled in a real hub, reached by use_device --------------------------


async def test_an_enrolled_endpoint_answers_use_device(
    device: Device, policy: EndpointPolicy, start_hub: StartHub, closed_port: int
) -> None:
    import aiohttp

    from hub.agent.tools.context import ToolContext
    from hub.agent.tools.devices import use_device
    from tests.conftest import owner_headers
    from tests.toolcall import call_tool

    server = await start_hub(
        ollama_host=f"http://127.0.0.1:{closed_port}", devices_allow_private=("127.0.0.1",)
    )
    server.hub.devices.endpoint = EndpointClient(policy)  # trusts the test certificate
    auth = owner_headers(server)
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{server.url}/api/devices",
            headers=auth,
            json={
                "name": "robot",
                "kind": "endpoint",
                "url": device.url + "/",
                "secret": SECRET,
                "capabilities": ["move", "camera"],
            },
        ) as response:
            enrolled = await response.json()
        assert enrolled == {
            "ok": True,
            "device_id": enrolled["device_id"],
            "kind": "endpoint",
            "url": device.url,
        }
        async with http.get(f"{server.url}/api/devices", headers=auth) as response:
            listed = (await response.json())["devices"][0]
        assert (listed["online"], listed["capabilities"]) == (None, ["move", "camera"])
        assert SECRET not in str(listed)
        async with http.get(
            f"{server.url}/api/devices/endpoint?deviceId={enrolled['device_id']}&action=telemetry",
            headers=auth,
        ) as response:
            assert (await response.json())["telemetry"] == TELEMETRY
    tiny = server.hub.tinys.get("tiny")
    assert tiny is not None
    ctx = ToolContext(server.hub, server.hub.owner, tiny)
    result = await call_tool(use_device, ctx, action="ask", name="robot", prompt="reply:status")
    assert result["content"][0]["text"] == "reply status"
    assert device.prompts == ["reply:status"]
