// TextEncoder and TextDecoder: UTF-8 bytes both ways, replacement characters for invalid input, fatal mode, the BOM; other encodings refused by name. The values are Node's.
// expect: {"bytes":[104,226,130,172,108,108,111,32,240,159,152,128],"length":12,"back":"h€llo 😀","replaced":"a�b","bom":"hi","view":"h","encoding":["utf-8","utf-8"],"caught":["TypeError","RangeError: TextDecoder: the encoding \"latin1\" is not available: toolweave's TextDecoder decodes UTF-8 only"]}
const bytes = new TextEncoder().encode("h€llo 😀");
const decoder = new TextDecoder();
const caught = [];
try { new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([0xff])); } catch (error) { caught.push(error.name); }
try { new TextDecoder("latin1"); } catch (error) { caught.push(error.name + ": " + error.message); }
return {
  bytes: Array.from(bytes),
  length: bytes.length,
  back: decoder.decode(bytes),
  replaced: decoder.decode(new Uint8Array([0x61, 0xe2, 0x82, 0x62])),
  bom: decoder.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x68, 0x69])),
  view: decoder.decode(new DataView(bytes.buffer, 0, 1)),
  encoding: [new TextEncoder().encoding, decoder.encoding],
  caught,
};
