// crypto.randomUUID and crypto.getRandomValues: version 4 UUIDs, bytes from the operating system spread over every value; float arrays and more than 65536 bytes refused as the standard says.
// expect: {"format":true,"distinct":50,"wordsVary":true,"bytesSpread":true,"refused":["TypeMismatchError","QuotaExceededError"]}
const ids = Array.from({ length: 50 }, () => crypto.randomUUID());
const words = crypto.getRandomValues(new Uint32Array(64));
const bytes = crypto.getRandomValues(new Uint8Array(4096));
const counts = new Array(256).fill(0);
for (const byte of bytes) counts[byte]++;
const refused = [];
try { crypto.getRandomValues(new Float64Array(2)); } catch (error) { refused.push(error.name); }
try { crypto.getRandomValues(new Uint8Array(65537)); } catch (error) { refused.push(error.name); }
return {
  format: ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id)),
  distinct: new Set(ids).size,
  wordsVary: new Set(words).size > 60,
  bytesSpread: counts.filter((count) => count > 0).length > 240,
  refused,
};
