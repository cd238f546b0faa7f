"""Tool calling for small on-device models (the embedded llama.cpp model): the offer, the call
as a small model writes it, the yes/no checks, the conversation as it is shown, and one model
step as a state machine (``step.py``). It names no tool: what is particular to one — how near
a message must be for it to be offered, the requests it serves, the arguments a small model
never writes, the question asked before it runs, its family — is declared where the tool is
defined (``drivers.base.SmallModelHints``) and handed over with the turn (``context.py``).
"""
