"""Devices: enrollment, presence, the relay mailbox, events, media and endpoint dial-out."""
