"""The one base for requests the hub refuses on purpose: bad input, unknown ids, no rights.

Stores raise a subclass with its HTTP status; the API's error middleware turns any of them into
``{"error": "..."}`` with that status, so routes do not each keep a table of their own.
"""

from __future__ import annotations


class Refused(Exception):
    """A request that cannot be met; the message is for a person, ``status`` its HTTP answer."""

    status = 400
