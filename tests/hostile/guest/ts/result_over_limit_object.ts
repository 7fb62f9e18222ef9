// A result built of many small records that add up to more than --max-result-bytes.
// expect-error: ResultTooLarge
// expect-message: --max-result-bytes 1048576
type Rec = { id: number; text: string };
const records: Rec[] = [];
for (let id = 0; id < 20000; id++) records.push({ id, text: "t".repeat(50) });
return records;
