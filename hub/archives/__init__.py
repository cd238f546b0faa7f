"""Archives and shares of conversations."""
