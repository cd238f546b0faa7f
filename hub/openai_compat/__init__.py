"""The hub's agent behind OpenAI's chat-completions API (docs/openai.md).

Clients that speak only OpenAI's API (Open WebUI, Continue, the ``llm`` command, the ``openai``
package) get the person's tiny: the same turn as ``POST /api/chat`` — memory pre-loaded, the
hub's tools run on the hub — read from OpenAI's request shape (:mod:`.request`) and written in
OpenAI's answer shapes (:mod:`.chunks`). Tools the client offers are handed back as
``tool_calls`` for the client to run (:mod:`.client_tools`); the tinys a caller may name are the
models (:mod:`.models`). The routes are in ``hub/api/completions.py``.
"""
