"""The only code that touches a serial port or a radio (serial.py, ble.py)."""
