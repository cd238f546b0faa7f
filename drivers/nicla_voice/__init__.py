"""The Arduino Nicla Voice over Bluetooth LE: wake words as events, recordings as WAV, and its
tools for the agent."""
