import koffi from "koffi";

/** XIAllDevices: the deviceid of a mask that names every device. */
const XI_ALL_DEVICES = 0;

/** One mask per event set, its bytes kept alive beside the struct that points at them. */
const masks = new Map<number, { struct: Buffer; keep: unknown }>();

/**
 * An XIEventMask (deviceid, mask_len, mask pointer) for all devices with the XI2 event bits
 * `bits` (each 1 << event type, types below 32), as the passive grab probes pass it.
 */
export function xiEventMask(bits: number): Buffer {
  const known = masks.get(bits);
  if (known) return known.struct;
  const mem = koffi.alloc("uint8_t", 4);
  koffi.encode(mem, koffi.array("uint8_t", 4), [
    bits & 0xff,
    (bits >>> 8) & 0xff,
    (bits >>> 16) & 0xff,
    bits >>> 24,
  ]);
  const struct = Buffer.alloc(16);
  struct.writeInt32LE(XI_ALL_DEVICES, 0);
  struct.writeInt32LE(4, 4);
  struct.writeBigUInt64LE(BigInt(koffi.address(mem)), 8);
  masks.set(bits, { struct, keep: mem });
  return struct;
}
