"""Pluggable hardware drivers, found through the ``tiny_hub.drivers`` entry-point group."""
