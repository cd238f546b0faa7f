"""Connections before they are requests: a deadline for the request head, JSON protocol errors.

aiohttp answers a request it cannot parse (a header line over 8190 bytes, a bad
Content-Length, an unknown method) itself, before any middleware: by default as ``text/plain``
quoting the offending bytes, with a traceback in the log. Here that answer is the hub's JSON
error, naming the problem without echoing the request, logged as one line.

A connection must send a complete request head within ``header_timeout_s`` of opening, else it
is closed: an idle socket or one trickling a byte at a time holds a file descriptor and memory
for nothing. Later heads on a kept-alive connection are bounded by aiohttp's keep-alive timeout
(:data:`KEEPALIVE_TIMEOUT_S`): an unfinished head leaves the connection idle, and it is closed.

aiohttp has no setting for either, so :class:`HubRunner` makes the protocol objects itself,
from a :class:`~aiohttp.web_protocol.RequestHandler` subclass.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import http_exceptions, web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

log = logging.getLogger(__name__)

KEEPALIVE_TIMEOUT_S = 75.0
MAX_HEADER_LINE_BYTES = 8190

_PROBLEMS: tuple[tuple[type[Exception], str], ...] = (
    (
        http_exceptions.LineTooLong,
        f"a request line or header is too long (limit {MAX_HEADER_LINE_BYTES} bytes)",
    ),
    (http_exceptions.BadHttpMethod, "not an HTTP request (unknown method)"),
    (http_exceptions.InvalidURLError, "the request target is not a valid URL"),
    (http_exceptions.InvalidHeader, "a header is malformed"),
    (http_exceptions.ContentLengthError, "the body does not match its Content-Length"),
    (http_exceptions.TransferEncodingError, "the chunked body is malformed"),
    (http_exceptions.ContentEncodingError, "the body is not in its Content-Encoding"),
    (http_exceptions.BadHttpMessage, "the request is malformed"),
)


def describe_protocol_error(exc: BaseException | None) -> str:
    """A phrase for a malformed request that quotes none of it."""
    for kind, phrase in _PROBLEMS:
        if isinstance(exc, kind):
            return phrase
    return "the request is malformed"


class HubRequestHandler(RequestHandler):
    """aiohttp's protocol with a head deadline and JSON protocol errors."""

    def __init__(self, *args: Any, header_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout_s = header_timeout_s
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        loop = asyncio.get_running_loop()
        self._head_deadline = loop.call_later(self._header_timeout_s, self._head_overdue)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._request_count and self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None
        super().connection_lost(exc)

    def _head_overdue(self) -> None:
        self._head_deadline = None
        if not self._request_count:
            log.debug(
                "closed a connection that sent no request head within %g s", self._header_timeout_s
            )
            self.force_close()

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status >= 500:
            return super().handle_error(request, status, exc, message)
        phrase = describe_protocol_error(exc)
        log.info("refused a malformed request from %s: %s", request.remote, phrase)
        if request.writer.output_size > 0:
            raise ConnectionError("the response had begun; the connection is closed instead")
        response = web.json_response({"error": f"bad request: {phrase}"}, status=status)
        response.force_close()
        return response


class HubServer(web.Server):
    """aiohttp's protocol factory, making :class:`HubRequestHandler` s."""

    def __init__(self, *args: Any, header_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout_s = header_timeout_s

    def __call__(self) -> RequestHandler:
        return HubRequestHandler(
            self, loop=self._loop, header_timeout_s=self.header_timeout_s, **self._kwargs
        )


class HubRunner(web.AppRunner):
    """An AppRunner whose connections are :class:`HubRequestHandler` s."""

    def __init__(self, app: web.Application, *, header_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(app, keepalive_timeout=KEEPALIVE_TIMEOUT_S, **kwargs)
        self._header_timeout_s = header_timeout_s

    async def _make_server(self) -> web.Server:
        made = await super()._make_server()
        return HubServer(
            made.request_handler,
            request_factory=made.request_factory,
            handler_cancellation=made.handler_cancellation,
            loop=made._loop,
            header_timeout_s=self._header_timeout_s,
            **made._kwargs,
        )
