"""Pending actions: what a chat turn proposed that only the person may carry out."""
