"""Audio, video, soundtracks and speech-to-text: the media libraries the hub and its drivers share.

Nothing here touches a port, a radio or the hub's stores: a driver turns what its device
captured into these formats, and the hub keeps, transcribes and shows them.
"""
