"""The hub's side of the drivers: what the installed drivers bring (catalog), which driver runs
which device (matching), one device's life (supervisor), the manager that runs them all, and
the one path of their audit and their events (audit, host)."""
