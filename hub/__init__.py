"""tiny-hub: the local companion hub (the process, its API, its agent and its stores)."""

__version__ = "0.1.0"
