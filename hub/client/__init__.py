"""The one client of the hub's HTTP API, used by the terminal UI and the command line alike:
requests and the chat stream (http), a turn's progress read from that stream (progress) and the
proposals a turn makes for the person to answer (proposals). It imports nothing from the hub
but ``hub.contracts``: whatever it knows, it knows from the API."""
