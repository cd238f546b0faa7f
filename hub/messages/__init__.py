"""Direct messages between the people of this hub: the inbox store, addressing, delivery."""
