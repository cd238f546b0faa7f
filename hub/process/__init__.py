"""The hub as a process: the long-lived parts and their start and stop order (parts), and what
it does by itself while it runs (housekeeping). The HTTP app enters it; nothing here serves
HTTP."""
