"""How the Flipper prints radio events: Sub-GHz packets, IR signals, tuned frequencies
(``princeton.c``, ``infrared_cli.c``, the CC1101's divider)."""

from __future__ import annotations

import math

SUBGHZ_FREQUENCY_RANGE_STR = (
    "299999755...348000000 or 386999938...464000000 or 778999847...928000000"
)
SUBGHZ_RANGES = ((299999755, 348000000), (386999938, 464000000), (778999847, 928000000))
SUBGHZ_RX_USAGE = "<Frequency: in Hz> <Device: 0 - CC1101_INT, 1 - CC1101_EXT>"
SUBGHZ_TX_USAGE = (
    "<3 Byte Key: in hex> <Frequency: in Hz> <Te us> <Repeat count> "
    "<Device: 0 - CC1101_INT, 1 - CC1101_EXT>"
)

# Infrared address/command lengths in bits (infrared protocol tables), for ir_decoded().
IR_BITS: dict[str, tuple[int, int]] = {
    "NEC": (8, 8),
    "NECext": (16, 16),
    "NEC42": (13, 8),
    "NEC42ext": (26, 16),
    "Samsung32": (8, 8),
    "RC5": (5, 6),
    "RC5X": (5, 7),
    "RC6": (8, 8),
    "SIRC": (5, 7),
    "SIRC15": (8, 7),
    "SIRC20": (13, 7),
    "Kaseikyo": (26, 10),
    "RCA": (4, 8),
    "Pioneer": (8, 8),
}


# --- helpers that format radio events the way the firmware does ------------------------------


def princeton_packet(key: int, te: int = 400, bits: int = 24) -> str:
    """A decoded Princeton packet as ``subghz rx`` prints it (``princeton.c`` get_string)."""
    data = key & ((1 << bits) - 1)
    reverse = int(f"{data:0{bits}b}"[::-1], 2)
    return (
        f"Princeton {bits}bit\r\n"
        f"Key:0x{data & 0xFFFFFF:08X}\r\n"
        f"Yek:0x{reverse:08X}\r\n"
        f"Sn:0x{data >> 4:05X} Btn:{data & 0xF:01X}\r\n"
        f"Te:{te}us\r\n"
    )


def ir_decoded(protocol: str, address: int, command: int, repeat: bool = False) -> str:
    """A decoded IR line as ``ir rx`` prints it, without its CR LF: ``NEC, A:0x04, C:0x08``.

    Widths are ``ceil(bits / 4)`` hex digits of the protocol's address and command lengths.
    """
    address_bits, command_bits = IR_BITS.get(protocol, (32, 32))
    aw, cw = math.ceil(address_bits / 4), math.ceil(command_bits / 4)
    return f"{protocol}, A:0x{address:0{aw}X}, C:0x{command:0{cw}X}{' R' if repeat else ''}"


def tuned_frequency(frequency: int) -> int:
    """The frequency the CC1101 really tunes to (26 MHz quartz, 2^16 divider): what rx prints."""
    return (frequency * 0x10000 // 26_000_000) * 26_000_000 // 0x10000


def frequency_valid(frequency: int) -> bool:
    return any(low <= frequency <= high for low, high in SUBGHZ_RANGES)
