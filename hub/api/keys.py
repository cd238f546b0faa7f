"""Typed keys for what the Application and each request carry."""

from __future__ import annotations

from aiohttp import web

from hub.runtime import Hub

HUB = web.AppKey("hub", Hub)
