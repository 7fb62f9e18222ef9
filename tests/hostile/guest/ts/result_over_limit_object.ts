// A result built of many small records that add up to more than --max-result-bytes is kept
// behind a handle; a piece of it reads back exactly.
// expect: [1448891, "Array(20000) of { \"id\": number, \"text\": string(50) }", [19998, 19999]]
type Rec = { id: number; text: string };
const records: Rec[] = [];
for (let id = 0; id < 20000; id++) records.push({ id, text: "t".repeat(50) });
const kept = await handle(records);
const tail = (await results.get(kept, { offset: 19998 })) as Rec[];
return [kept.bytes, kept.shape, tail.map((record) => record.id)];
