"""Forged tools: the V8 sandbox they run in, and the store that keeps them."""
