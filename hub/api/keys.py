"""Typed keys for what the Application and each request carry: the hub, the parts of the
process running beside the API, and where the API is served."""

from __future__ import annotations

from aiohttp import web

from hub.process.parts import Listening, Parts
from hub.runtime.hub import Hub

HUB = web.AppKey("hub", Hub)
PARTS = web.AppKey("parts", Parts)
LISTENING = web.AppKey("listening", Listening)
