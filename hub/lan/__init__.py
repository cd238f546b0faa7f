"""The hub on the home network: its address (lanUrl), its mDNS advertisement, pairing phones,
and TLS with a certificate a phone can pin."""
