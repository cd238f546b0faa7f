"""Money between the people of one hub (off unless ``payments.enabled``)."""
