# tiny-hub board script for the Arduino Nicla Vision (OpenMV firmware, MicroPython).
#
# Save this file on the board's drive as main.py and reset the board (README.md beside it).
# It answers the hub over USB with OpenMV's RPC library (rpc.rpc_usb_vcp_slave), and advertises
# a small BLE status service for when the board is worn away from USB.
#
# RPC callbacks (all integers little-endian; "ERR:<what happened>" answers a failed start call,
# b"" answers a read of bytes the board does not have):
#   jpeg_image_snapshot  "sensor.RGB565,sensor.QVGA[,quality]" -> <I JPEG size
#   jpeg_image_read      <II offset,size -> those bytes of the photo
#                        (no data: upstream's cut-through, the whole JPEG raw after the answer)
#   video_burst          "pixformat,framesize,quality,frames,interval_ms"
#                        -> <II count,span_ms then count x <I frame sizes; frames stay in RAM
#                        (the burst stops early when the heap runs low; span_ms is the time from
#                        the first frame to the last)
#   video_frame_read     <III frame,offset,size -> those bytes of that frame
#   audio_record         <I milliseconds (1..60000) -> <I bytes it will record (16 kHz mono PCM16)
#                        the microphone fills a 2 s ring in the background while the host reads
#   audio_read           <II offset,size -> those bytes once recorded (waits for them);
#                        b"" if they were never recorded or the ring overwrote them
#   status               -> JSON: board, firmware, openmv, id, uptime_ms, battery, mem_free, usb,
#                        ble, audio, video
#
# The Python tests never run this file (there is no OpenMV here); the emulator
# firmware_bridges/emulators/nicla_vision.py answers the same calls the same way.

import gc
import json
import struct
import time

import audio
import omv
import pyb
import rpc
import sensor
from micropython import const

try:
    import bluetooth
except ImportError:  # a firmware built without Bluetooth: USB only
    bluetooth = None

FIRMWARE = "tiny-hub-nicla 1.0"
BOARD = "Arduino Nicla Vision"
BLE_NAME = "Nicla Vision"
STATUS_SERVICE_UUID = "0272c15a-f467-488a-88e5-6b474a7fc499"
STATUS_CHARACTERISTIC_UUID = "0272c15b-f467-488a-88e5-6b474a7fc499"

PIXFORMATS = {"RGB565": sensor.RGB565, "GRAYSCALE": sensor.GRAYSCALE}
FRAMESIZES = {
    "QQVGA": sensor.QQVGA,
    "QVGA": sensor.QVGA,
    "HVGA": sensor.HVGA,
    "VGA": sensor.VGA,
}

AUDIO_RATE = const(16000)
AUDIO_BLOCK = const(1024)  # bytes per microphone callback here (512 samples, DFSDM)
AUDIO_RING_BYTES = const(65536)  # 64 blocks: 2.048 s
AUDIO_MAX_MS = const(60000)
VIDEO_MAX_FRAMES = const(120)
VIDEO_RESERVE = const(49152)  # heap left free while a burst fills it
BLE_EVERY_MS = const(5000)
# How long a result waits for the host to fetch it (the rpc loop's send_timeout). The library's
# 1 s is less than a host that backs off between polls may take when its computer is busy, and
# a result given up is a call lost; a host gone for good costs this long before the next command.
RESULT_HOLD_MS = const(5000)
COMMAND_WAIT_MS = const(1000)  # the loop's recv_timeout: how often the short waits start again
# The first wait for each packet of the host (the library starts at 2 ms and adds 1 ms a miss).
# Between our result header and its poll for the result the host must read the header and
# answer; a computer that is busy takes tens of ms for that, and a result whose poll came after
# the wait is served again from the header, which the host's own library does not retry. A wait
# ends as soon as the bytes are in, so a longer one costs nothing when the host is quick.
FIRST_WAIT_MS = const(250)

_IRQ_CENTRAL_CONNECT = const(1)
_IRQ_CENTRAL_DISCONNECT = const(2)
_FLAG_READ = const(0x0002)
_FLAG_NOTIFY = const(0x0010)

# --- the camera -----------------------------------------------------------------------------------

omv.disable_fb(True)  # no frame-buffer copies for the IDE: the RPC owns the USB port
sensor.reset()
sensor.set_pixformat(sensor.RGB565)
sensor.set_framesize(sensor.QVGA)
sensor.skip_frames(time=2000)
_config = ["RGB565", "QVGA"]

_photo = None
_frames = []


def _key(name, table):
    key = name.strip()
    if key.startswith("sensor."):
        key = key[7:]
    if key not in table:
        raise ValueError("unknown " + name)
    return key


def _configure(pixformat, framesize):
    """Set the sensor only when asked for something else (a change needs frames to settle)."""
    pixformat = _key(pixformat, PIXFORMATS)
    framesize = _key(framesize, FRAMESIZES)
    if [pixformat, framesize] != _config:
        sensor.set_pixformat(PIXFORMATS[pixformat])
        sensor.set_framesize(FRAMESIZES[framesize])
        sensor.skip_frames(n=3)
        _config[0], _config[1] = pixformat, framesize


def _jpeg(img, quality):
    """A JPEG copy of a frame on the heap (to_jpeg since OpenMV 4.5, compressed before)."""
    try:
        return img.to_jpeg(quality=quality, copy=True)
    except AttributeError:
        return img.compressed(quality=quality)


def _fields(data):
    return bytes(data).decode().split(",") if len(data) else []


def _quality(text):
    quality = int(text)
    if not 1 <= quality <= 100:
        raise ValueError("quality is 1 to 100")
    return quality


def _guard(function, data):
    """A start call that fails answers ERR:<why> (an exception would end the RPC loop)."""
    try:
        return function(data)
    except Exception as exc:  # everything, or the board stops answering
        gc.collect()
        return f"ERR:{type(exc).__name__}: {exc}".encode()


def _guard_read(function, data):
    """A read that fails answers b"" (the host then says the bytes are gone)."""
    try:
        return function(data)
    except Exception:
        return b""


def _snapshot(data):
    global _photo
    fields = _fields(data)
    quality = _quality(fields[2]) if len(fields) > 2 else 90
    _configure(fields[0] if fields else "RGB565", fields[1] if len(fields) > 1 else "QVGA")
    _photo = None
    gc.collect()
    _photo = _jpeg(sensor.snapshot(), quality)
    return struct.pack("<I", _photo.size())


def _send_photo():
    interface.put_bytes(_photo.bytearray(), 5000)


def _photo_read(data):
    if _photo is None:
        return b""
    if not len(data):
        interface.schedule_callback(_send_photo)
        return b""
    offset, size = struct.unpack("<II", data)
    return memoryview(_photo.bytearray())[offset : offset + size]


def _burst(data):
    global _frames
    fields = _fields(data)
    quality, count, interval = _quality(fields[2]), int(fields[3]), int(fields[4])
    if not 1 <= count <= VIDEO_MAX_FRAMES or not 0 <= interval <= 2000:
        raise ValueError(f"1 to {VIDEO_MAX_FRAMES} frames, 0 to 2000 ms apart")
    _frames = []
    gc.collect()
    _configure(fields[0], fields[1])
    sizes = []
    first = last = due = time.ticks_ms()
    for index in range(count):
        while time.ticks_diff(due, time.ticks_ms()) > 0:
            time.sleep_ms(1)
        if gc.mem_free() < VIDEO_RESERVE:
            gc.collect()
            if gc.mem_free() < VIDEO_RESERVE:
                break
        try:
            frame = _jpeg(sensor.snapshot(), quality)
        except MemoryError:
            break
        last = time.ticks_ms()
        if not index:
            first = last
        _frames.append(frame)
        sizes.append(frame.size())
        due = time.ticks_add(due, interval)
    span = time.ticks_diff(last, first) if len(sizes) > 1 else 0
    return struct.pack("<II", len(sizes), span) + struct.pack(f"<{len(sizes)}I", *sizes)


def _frame_read(data):
    index, offset, size = struct.unpack("<III", data)
    return memoryview(_frames[index].bytearray())[offset : offset + size]


def jpeg_image_snapshot(data):
    return _guard(_snapshot, data)


def jpeg_image_read(data):
    return _guard_read(_photo_read, data)


def video_burst(data):
    return _guard(_burst, data)


def video_frame_read(data):
    return _guard_read(_frame_read, data)


# --- the microphone -----------------------------------------------------------------------------

_ring = bytearray(AUDIO_RING_BYTES)  # allocated once, at boot, while the heap is whole
_ring_view = memoryview(_ring)
_audio = {"total": 0, "written": 0, "on": False}
audio.init(channels=1, frequency=AUDIO_RATE, gain_db=24, highpass=0.9883)


def _heard(pcm):
    """The microphone callback (scheduled, every 32 ms): copy into the ring, stop at the end."""
    state = _audio
    if not state["on"]:
        return
    written = state["written"]
    count = min(len(pcm), state["total"] - written)
    at = written % AUDIO_RING_BYTES
    first = min(count, AUDIO_RING_BYTES - at)
    source = memoryview(pcm)
    _ring_view[at : at + first] = source[:first]
    if count > first:
        _ring_view[0 : count - first] = source[first:count]
    state["written"] = written + count
    if state["written"] >= state["total"]:
        state["on"] = False
        audio.stop_streaming()


def _record(data):
    (ms,) = struct.unpack("<I", data)
    if not 1 <= ms <= AUDIO_MAX_MS:
        raise ValueError(f"record 1 to {AUDIO_MAX_MS} ms")
    if _audio["on"]:
        audio.stop_streaming()
    _audio["total"] = ms * AUDIO_RATE // 1000 * 2
    _audio["written"] = 0
    _audio["on"] = True
    audio.start_streaming(_heard)
    return struct.pack("<I", _audio["total"])


def _audio_read(data):
    offset, size = struct.unpack("<II", data)
    end = min(offset + size, _audio["total"])
    if offset >= end:
        return b""
    wait_ms = (end - _audio["written"]) * 1000 // (AUDIO_RATE * 2) + 2000
    deadline = time.ticks_add(time.ticks_ms(), wait_ms)
    while _audio["written"] < end and _audio["on"]:
        if time.ticks_diff(deadline, time.ticks_ms()) <= 0:
            break
        time.sleep_ms(5)  # the microphone's scheduled callbacks run meanwhile
    if _audio["written"] < end or offset < _audio["written"] - AUDIO_RING_BYTES:
        return b""
    at = offset % AUDIO_RING_BYTES
    count = end - offset
    first = min(count, AUDIO_RING_BYTES - at)
    chunk = bytes(_ring_view[at : at + first]) + bytes(_ring_view[0 : count - first])
    if offset < _audio["written"] - AUDIO_RING_BYTES:
        return b""  # overwritten while copying
    return chunk


def audio_record(data):
    return _guard(_record, data)


def audio_read(data):
    return _guard_read(_audio_read, data)


# --- status, USB and BLE --------------------------------------------------------------------------

_boot_ms = time.ticks_ms()
_usb = pyb.USB_VCP()


def _uptime_ms():
    return time.ticks_diff(time.ticks_ms(), _boot_ms)


def _status_dict():
    return {
        "board": BOARD,
        "firmware": FIRMWARE,
        "openmv": omv.version_string(),
        "id": omv.board_id(),
        "uptime_ms": _uptime_ms(),
        "battery": None,  # the Nicla Vision's PMIC reports no charge level to OpenMV
        "mem_free": gc.mem_free(),
        "usb": _usb.isconnected(),
        "ble": {
            "name": BLE_NAME,
            "advertising": _beacon is not None,
            "connected": len(_beacon.connections) if _beacon is not None else 0,
        },
        "audio": {"rate": AUDIO_RATE, "channels": 1, "width": 2, "recording": _audio["on"]},
        "video": {"max_frames": VIDEO_MAX_FRAMES},
    }


def status(data):
    return _guard(lambda _data: json.dumps(_status_dict()).encode(), data)


def _adv_field(kind, value):
    return struct.pack("BB", len(value) + 1, kind) + value


class StatusBeacon:
    """Advertises "Nicla Vision" with a status service: one read/notify characteristic holding
    compact JSON ({"fw","up_s","usb","rec","mem"}), refreshed every 5 s and notified to centrals.

    The name goes in the advertisement, the 128-bit service UUID in the scan response (both do
    not fit the 31-byte advertisement together).
    """

    def __init__(self):
        self.ble = bluetooth.BLE()
        self.ble.active(True)
        self.ble.config(gap_name=BLE_NAME)
        self.ble.irq(self._irq)
        service = bluetooth.UUID(STATUS_SERVICE_UUID)
        characteristic = (bluetooth.UUID(STATUS_CHARACTERISTIC_UUID), _FLAG_READ | _FLAG_NOTIFY)
        ((self.handle,),) = self.ble.gatts_register_services(((service, (characteristic,)),))
        self.ble.gatts_set_buffer(self.handle, 160)
        self.connections = set()
        self.adv = _adv_field(0x01, b"\x06") + _adv_field(0x09, BLE_NAME.encode())
        self.resp = _adv_field(0x07, bytes(service))
        self.last = 0
        self.publish()
        self.advertise()

    def _irq(self, event, data):
        if event == _IRQ_CENTRAL_CONNECT:
            self.connections.add(data[0])
        elif event == _IRQ_CENTRAL_DISCONNECT:
            self.connections.discard(data[0])
            self.advertise()

    def advertise(self):
        self.ble.gap_advertise(500000, adv_data=self.adv, resp_data=self.resp)

    def publish(self):
        payload = json.dumps(
            {
                "fw": FIRMWARE,
                "up_s": _uptime_ms() // 1000,
                "usb": _usb.isconnected(),
                "rec": _audio["on"],
                "mem": gc.mem_free(),
            }
        ).encode()
        self.ble.gatts_write(self.handle, payload)
        for connection in self.connections:
            try:  # noqa: SIM105 - MicroPython has no contextlib
                self.ble.gatts_notify(connection, self.handle)
            except OSError:
                pass
        self.last = time.ticks_ms()

    def tick(self):
        if time.ticks_diff(time.ticks_ms(), self.last) >= BLE_EVERY_MS:
            self.publish()


_beacon = None
if bluetooth is not None:
    try:
        _beacon = StatusBeacon()
    except Exception as exc:  # the USB side works without it
        print("BLE status service not started:", exc)


def _tick():
    if _beacon is not None:
        _beacon.tick()


# --- the RPC loop ---------------------------------------------------------------------------------

try:
    interface = rpc.rpc_usb_vcp_slave()
except OSError as exc:  # the OpenMV IDE holds the port: save as main.py, disconnect, reset
    print("RPC not started:", exc)
    interface = None

if interface is None:
    while True:
        _tick()
        time.sleep_ms(1000)

interface._get_short_timeout_reset = FIRST_WAIT_MS
for callback in (
    jpeg_image_snapshot,
    jpeg_image_read,
    video_burst,
    video_frame_read,
    audio_record,
    audio_read,
    status,
):
    interface.register_callback(callback)
interface.setup_loop_callback(_tick)
interface.loop(recv_timeout=COMMAND_WAIT_MS, send_timeout=RESULT_HOLD_MS)
