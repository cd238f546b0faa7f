"""The embedded model in its own process, as Ollama runs its llama.cpp runners.

Why our own runner instead of ``python -m llama_cpp.server``: that server needs FastAPI and
uvicorn, cannot stream tool choice, renders list content through templates that reject it,
and answers over HTTP on a port; a child on pipes speaking one JSON line per event is all the
hub needs, starts faster, and tells the hub exactly how it died (the exit signal).

``child`` is the process, ``protocol`` its lines, ``process`` one child seen from the hub, and
``supervisor`` the one kept warm, replaced on death and released when idle.
"""
