/**
 * TFRecord framing, the container of TensorBoard's event files: each record is
 *
 *     uint64 length (little-endian) · uint32 masked CRC-32C of those 8 bytes
 *     data (length bytes)           · uint32 masked CRC-32C of the data
 *
 * CRC-32C is the Castagnoli polynomial (reflected 0x82F63B78); TensorFlow stores it "masked",
 * rotated right by 15 bits plus 0xa282ead8, so that a CRC of data that holds CRCs stays strong.
 */

const castagnoli = 0x82f63b78;
const maskDelta = 0xa282ead8;

const table = (() => {
  const entries = new Uint32Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ castagnoli : crc >>> 1;
    entries[byte] = crc >>> 0;
  }
  return entries;
})();

/** CRC-32C of `bytes` (crc32c("123456789") = 0xe3069283). */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = table[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** TensorFlow's masked CRC: rotate right by 15 bits, add a constant (mod 2³²). */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + maskDelta) >>> 0;
}

/** One record, framed. */
export function encodeRecord(data: Uint8Array): Uint8Array {
  const framed = new Uint8Array(8 + 4 + data.length + 4);
  const view = new DataView(framed.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(framed.subarray(0, 8)), true);
  framed.set(data, 12);
  view.setUint32(12 + data.length, maskedCrc32c(data), true);
  return framed;
}

/**
 * The records of a TFRecord file, each checked against both of its CRCs. A record cut short at
 * the end (a writer stopped mid-write) ends the list; a CRC that does not match throws.
 */
export function decodeRecords(bytes: Uint8Array): Uint8Array[] {
  const records: Uint8Array[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = 0;
  while (offset + 12 <= bytes.length) {
    const header = bytes.subarray(offset, offset + 8);
    if (view.getUint32(offset + 8, true) !== maskedCrc32c(header))
      throw new Error(`TFRecord at byte ${offset}: the length's CRC does not match`);
    const length = Number(view.getBigUint64(offset, true));
    const end = offset + 12 + length + 4;
    if (end > bytes.length) break;
    const data = bytes.subarray(offset + 12, offset + 12 + length);
    if (view.getUint32(offset + 12 + length, true) !== maskedCrc32c(data))
      throw new Error(`TFRecord at byte ${offset}: the data's CRC does not match`);
    records.push(data);
    offset = end;
  }
  return records;
}
