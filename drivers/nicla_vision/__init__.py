"""The Arduino Nicla Vision running OpenMV: photos, clips and audio over OpenMV's RPC on USB,
its tools for the agent, and the capture of a real board's answers."""
