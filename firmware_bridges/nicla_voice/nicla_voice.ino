/*
  tiny-hub bridge for the Arduino Nicla Voice (ABX00061): wake words and recordings over BLE.

  Board: "Arduino Mbed OS Nicla Boards" core (arduino:mbed_nicla:nicla_voice), libraries NDP and
  Nicla_System (both in the core) and ArduinoBLE. The NDP120 must hold the three synpkg files
  (mcu_fw_120_v91, dsp_firmware_v91 and a model); see README.md in this directory for flashing,
  and for every UUID and byte of the protocol below (drivers/nicla_voice/driver.py is the hub's side).

  Service e0c80000-7a4b-4f4e-9a2f-6e6963766f69, all integers little-endian:
    e0c80001 wake    NOTIFY  uptime_ms u32 | label_len u8 | label (UTF-8, <= 32 bytes)
    e0c80002 control WRITE   0x01 duration_ms u32, format u8, max_chunk u8, take u8 | 0x02 cancel
    e0c80003 audio   NOTIFY  seq u16 | kind u8 | ...   H header, D data, E end
    e0c80004 status  READ|NOTIFY  battery u8 (0xFF unknown) | state u8 (1 recording) | version

  Threads: NDP.onMatch runs on the NDP library's event thread (768-byte stack), and ArduinoBLE
  is not thread-safe, so the match callback only copies the label; loop() notifies it. BLE
  write handlers run inside BLE.poll() and also while a notification waits for a free buffer
  (HCI.sendAclPkt polls), so the control handler only stores the request; loop() acts on it.
*/

#include "NDP.h"
#include <ArduinoBLE.h>

#define FIRMWARE_VERSION "tiny-nv 0.1.0"

#define SERVICE_UUID "e0c80000-7a4b-4f4e-9a2f-6e6963766f69"
#define WAKE_UUID    "e0c80001-7a4b-4f4e-9a2f-6e6963766f69"
#define CONTROL_UUID "e0c80002-7a4b-4f4e-9a2f-6e6963766f69"
#define AUDIO_UUID   "e0c80003-7a4b-4f4e-9a2f-6e6963766f69"
#define STATUS_UUID  "e0c80004-7a4b-4f4e-9a2f-6e6963766f69"

static const uint32_t BOARD_RATE = 16000;      // the NDP120's audio: 16 kHz mono PCM16
static const uint32_t MAX_RECORD_MS = 60000;   // longer requests are refused (status 3)
static const int MAX_CHUNK = 244;              // largest audio notification (MTU 247 - 3)
static const int MAX_LABEL = 32;
static const int CONTROL_SIZE = 8;
static const uint32_t AUDIO_STALL_MS = 2000;   // no audio from the NDP this long: status 2
static const uint32_t BATTERY_EVERY_MS = 60000;

static const uint8_t OP_RECORD = 0x01;
static const uint8_t OP_CANCEL = 0x02;
static const uint8_t FORMAT_MULAW = 0;
static const uint8_t FORMAT_PCM16 = 1;
static const uint8_t KIND_HEADER = 'H';
static const uint8_t KIND_DATA = 'D';
static const uint8_t KIND_END = 'E';
static const uint8_t STATUS_OK = 0;
static const uint8_t STATUS_CANCELLED = 1;
static const uint8_t STATUS_AUDIO_FAILED = 2;
static const uint8_t STATUS_REFUSED = 3;

static const int32_t MULAW_BIAS = 0x84;
static const int32_t MULAW_CLIP = 32635;

BLEService nvService(SERVICE_UUID);
BLECharacteristic wakeChar(WAKE_UUID, BLENotify, 5 + MAX_LABEL);
BLECharacteristic controlChar(CONTROL_UUID, BLEWrite, CONTROL_SIZE);
BLECharacteristic audioChar(AUDIO_UUID, BLENotify, MAX_CHUNK);
BLECharacteristic statusChar(STATUS_UUID, BLERead | BLENotify, 2 + sizeof(FIRMWARE_VERSION));

// A wake word matched on the NDP thread, waiting for loop() to notify it.
static volatile bool wakePending = false;
static char wakeLabel[MAX_LABEL + 1];
static volatile uint32_t wakeAt = 0;

// A control write, waiting for loop() to act on it.
static volatile bool requestPending = false;
static uint8_t request[CONTROL_SIZE];
static int requestLength = 0;

static volatile bool ndpFailed = false;

// The take being recorded and streamed.
struct Take {
  bool active;
  uint8_t take;
  uint8_t format;
  uint16_t payload;      // audio bytes per data chunk: max_chunk - 3
  uint32_t totalBytes;
  uint16_t chunks;
  uint16_t nextSeq;      // the next data chunk's seq (1..chunks)
  uint32_t sentBytes;
  uint32_t lastAudioAt;
};
static Take rec = {};

static uint8_t chunk[MAX_CHUNK];
static uint16_t chunkLength = 3;             // bytes 0..2 are the seq and kind
static int16_t ndpSamples[1024];             // 2048 bytes, as Record_and_stream uses
static int ndpChunkSize = 0;
static int lastBattery = -2;
static uint32_t batteryCheckedAt = 0;

// -- little-endian helpers -------------------------------------------------------------------

static void put16(uint8_t* at, uint16_t value) {
  at[0] = value & 0xFF;
  at[1] = value >> 8;
}

static void put32(uint8_t* at, uint32_t value) {
  for (int i = 0; i < 4; i++) {
    at[i] = (value >> (8 * i)) & 0xFF;
  }
}

static uint32_t get32(const uint8_t* at) {
  return (uint32_t)at[0] | ((uint32_t)at[1] << 8) | ((uint32_t)at[2] << 16) | ((uint32_t)at[3] << 24);
}

// -- G.711 mu-law (the hub decodes it; firmware_bridges/emulators/nicla_voice.py mirrors this) --

static uint8_t linearToMulaw(int16_t pcm) {
  int32_t sample = pcm;
  uint8_t sign = 0;
  if (sample < 0) {
    sign = 0x80;
    sample = -sample;
  }
  if (sample > MULAW_CLIP) {
    sample = MULAW_CLIP;
  }
  sample += MULAW_BIAS;
  uint8_t exponent = 7;
  for (int32_t mask = 0x4000; exponent > 0 && !(sample & mask); mask >>= 1) {
    exponent--;
  }
  uint8_t mantissa = (sample >> (exponent + 3)) & 0x0F;
  return ~(sign | (exponent << 4) | mantissa);
}

// -- callbacks (other contexts: copy and return) ----------------------------------------------

void onMatch(char* label) {
  core_util_critical_section_enter();
  strncpy(wakeLabel, label ? label : "match", MAX_LABEL);
  wakeLabel[MAX_LABEL] = '\0';
  wakeAt = millis();
  wakePending = true;
  core_util_critical_section_exit();
}

void onNdpError() {
  ndpFailed = true;
}

void onControl(BLEDevice central, BLECharacteristic characteristic) {
  int length = characteristic.valueLength();
  if (length > CONTROL_SIZE) {
    length = CONTROL_SIZE;
  }
  memcpy(request, characteristic.value(), length);
  requestLength = length;
  requestPending = true;
}

// -- status and wakes -------------------------------------------------------------------------

static int batteryPercent() {
  int percent = nicla::getBatteryVoltagePercentage();  // negative when it cannot tell
  return (percent < 0 || percent > 100) ? 0xFF : percent;
}

static void updateStatus() {
  uint8_t value[2 + sizeof(FIRMWARE_VERSION)];
  lastBattery = batteryPercent();
  value[0] = lastBattery;
  value[1] = rec.active ? 1 : 0;
  memcpy(&value[2], FIRMWARE_VERSION, strlen(FIRMWARE_VERSION));
  statusChar.writeValue(value, 2 + strlen(FIRMWARE_VERSION));
}

static void sendWake() {
  char label[MAX_LABEL + 1];
  uint32_t at;
  core_util_critical_section_enter();
  memcpy(label, wakeLabel, sizeof(label));
  at = wakeAt;
  wakePending = false;
  core_util_critical_section_exit();

  uint8_t value[5 + MAX_LABEL];
  uint8_t length = strlen(label);
  put32(&value[0], at);
  value[4] = length;
  memcpy(&value[5], label, length);
  // At MTU 23 the stack sends the first 20 bytes; the hub keeps what arrives.
  wakeChar.writeValue(value, 5 + length);
}

// -- recording --------------------------------------------------------------------------------

static void sendEnd(uint16_t seq, uint8_t take, uint8_t status, uint16_t sent) {
  uint8_t value[7];
  put16(&value[0], seq);
  value[2] = KIND_END;
  value[3] = take;
  value[4] = status;
  put16(&value[5], sent);
  audioChar.writeValue(value, sizeof(value));
}

static void finishTake(uint8_t status) {
  if (!rec.active) {
    return;
  }
  rec.active = false;
  uint16_t sent = rec.nextSeq - 1;
  sendEnd(status == STATUS_OK ? rec.chunks + 1 : rec.nextSeq, rec.take, status, sent);
  chunkLength = 3;
  updateStatus();
}

static void startTake(uint32_t durationMs, uint8_t format, uint8_t maxChunk, uint8_t take) {
  uint32_t width = (format == FORMAT_PCM16) ? 2 : 1;
  if (format > FORMAT_PCM16 || maxChunk < 4 || durationMs == 0 || durationMs > MAX_RECORD_MS) {
    sendEnd(0, take, STATUS_REFUSED, 0);
    return;
  }
  if (ndpFailed) {
    sendEnd(0, take, STATUS_AUDIO_FAILED, 0);
    return;
  }
  if (maxChunk > MAX_CHUNK) {
    maxChunk = MAX_CHUNK;
  }
  uint32_t payload = maxChunk - 3;
  uint32_t totalBytes = (uint32_t)((uint64_t)durationMs * BOARD_RATE / 1000) * width;
  uint32_t chunks = (totalBytes + payload - 1) / payload;
  if (chunks > 65534) {
    sendEnd(0, take, STATUS_REFUSED, 0);  // does not fit the u16 seq at this chunk size
    return;
  }
  rec.active = true;
  rec.take = take;
  rec.format = format;
  rec.payload = payload;
  rec.totalBytes = totalBytes;
  rec.chunks = chunks;
  rec.nextSeq = 1;
  rec.sentBytes = 0;
  rec.lastAudioAt = millis();
  chunkLength = 3;

  uint8_t header[15];
  put16(&header[0], 0);
  header[2] = KIND_HEADER;
  header[3] = take;
  header[4] = format;
  put32(&header[5], BOARD_RATE);
  put32(&header[9], totalBytes);
  put16(&header[13], chunks);
  audioChar.writeValue(header, sizeof(header));
  updateStatus();
}

static void handleRequest() {
  uint8_t copy[CONTROL_SIZE];
  int length;
  core_util_critical_section_enter();
  memcpy(copy, request, sizeof(copy));
  length = requestLength;
  requestPending = false;
  core_util_critical_section_exit();

  if (length == 1 && copy[0] == OP_CANCEL) {
    finishTake(STATUS_CANCELLED);
    return;
  }
  if (length != CONTROL_SIZE || copy[0] != OP_RECORD) {
    sendEnd(0, length == CONTROL_SIZE ? copy[7] : 0, STATUS_REFUSED, 0);
    return;
  }
  finishTake(STATUS_CANCELLED);  // a new request replaces the running take
  startTake(get32(&copy[1]), copy[5], copy[6], copy[7]);
}

static void flushChunk() {
  put16(&chunk[0], rec.nextSeq);
  chunk[2] = KIND_DATA;
  // Blocks while the controller has no free buffer: the link paces the stream.
  audioChar.writeValue(chunk, chunkLength);
  rec.sentBytes += chunkLength - 3;
  rec.nextSeq++;
  chunkLength = 3;
  if (rec.sentBytes >= rec.totalBytes) {
    finishTake(STATUS_OK);
  }
}

static void appendByte(uint8_t value) {
  if (!rec.active) {
    return;
  }
  chunk[chunkLength++] = value;
  uint32_t buffered = chunkLength - 3;
  if (buffered == rec.payload || rec.sentBytes + buffered == rec.totalBytes) {
    flushChunk();
  }
}

static void pumpAudio() {
  unsigned int length = 0;
  int status = NDP.extractData((uint8_t*)ndpSamples, &length);
  if (status != 0 || length == 0) {
    if (millis() - rec.lastAudioAt > AUDIO_STALL_MS) {
      finishTake(STATUS_AUDIO_FAILED);
    }
    return;
  }
  rec.lastAudioAt = millis();
  unsigned int count = length / 2;
  for (unsigned int i = 0; i < count && rec.active; i++) {
    int16_t sample = ndpSamples[i];
    if (rec.format == FORMAT_MULAW) {
      appendByte(linearToMulaw(sample));
    } else {
      appendByte(sample & 0xFF);
      appendByte((uint16_t)sample >> 8);
    }
  }
}

// -- setup and loop ---------------------------------------------------------------------------

static void haltBlinking() {
  nicla::leds.begin();
  while (true) {
    nicla::leds.setColor(red);
    delay(200);
    nicla::leds.setColor(off);
    delay(200);
  }
}

void setup() {
  Serial.begin(115200);
  nicla::begin();
  nicla::disableLDO();
  nicla::leds.begin();

  if (!BLE.begin()) {
    Serial.println("Starting BLE failed");
    haltBlinking();
  }
  BLE.setLocalName("Nicla Voice");
  BLE.setDeviceName("Nicla Voice");
  BLE.setConnectionInterval(6, 12);  // 7.5-15 ms: room for 16 kB/s of mu-law
  BLE.setAdvertisedService(nvService);
  nvService.addCharacteristic(wakeChar);
  nvService.addCharacteristic(controlChar);
  nvService.addCharacteristic(audioChar);
  nvService.addCharacteristic(statusChar);
  BLE.addService(nvService);
  controlChar.setEventHandler(BLEWritten, onControl);

  NDP.onError(onNdpError);
  NDP.onMatch(onMatch);
  NDP.begin("mcu_fw_120_v91.synpkg");
  NDP.load("dsp_firmware_v91.synpkg");
  NDP.load("alexa_334_NDP120_B0_v11_v91.synpkg");
  NDP.getInfo();  // reads the model's labels: onMatch(char*) needs them
  NDP.turnOnMicrophone();
  ndpChunkSize = NDP.getAudioChunkSize();  // also sets the size extractData reads
  if (ndpChunkSize <= 0 || ndpChunkSize >= (int)sizeof(ndpSamples)) {
    Serial.println("NDP audio chunk does not fit the buffer");
    ndpFailed = true;
  }
  NDP.interrupts();

  updateStatus();
  BLE.advertise();
  nicla::leds.setColor(green);
  delay(200);
  nicla::leds.setColor(off);
  nicla::leds.end();
}

void loop() {
  BLE.poll();
  if (requestPending) {
    handleRequest();
  }
  if (wakePending) {
    sendWake();
  }
  if (rec.active) {
    if (BLE.connected()) {
      pumpAudio();
    } else {
      rec.active = false;  // nobody to send to; the next central starts afresh
      chunkLength = 3;
    }
  }
  if (millis() - batteryCheckedAt > BATTERY_EVERY_MS) {
    batteryCheckedAt = millis();
    if (batteryPercent() != lastBattery) {
      updateStatus();
    }
  }
  if (!rec.active) {
    delay(5);  // idle: let the radio and the NDP thread run
  }
}
