// A tool without an output schema resolves to its text as the server sent it, unless the text is
// a JSON object or array: then to that value, where a number no double holds exactly (here a
// 20-digit id) is a string of its digits, and the answer says where. The same in Python
// (tools__text_results.py); the table is in docs/security.md.
// expect: [["1.10","string"],["12345678901234567890","string"],["-0","string"],["1e3","string"],["null","string"],["\"quoted\"","string"],["hello","string"],[{"id":"12345678901234567890","price":1.1,"count":3,"nested":{"ok":[1,2.5,null]}},"object"],[[1,"two",null,-0.5,"9007199254740993"],"object"]]
// expect-message: Warning: fixture.echo answered JSON with 1 number that a double cannot hold exactly; code received it as a string of its digits: /id (12345678901234567890)
// expect-message: Warning: fixture.echo answered JSON with 1 number that a double cannot hold exactly; code received it as a string of its digits: /4 (9007199254740993)
const sent = [
  "1.10",
  "12345678901234567890",
  "-0",
  "1e3",
  "null",
  "\"quoted\"",
  "hello",
  "{\"id\": 12345678901234567890, \"price\": 1.10, \"count\": 3, \"nested\": {\"ok\": [1, 2.5, null]}}",
  "[1, \"two\", null, -0.5, 9007199254740993]",
];
const received = [];
for (const message of sent) {
  const value = await tools.fixture.echo({ message });
  received.push([value, typeof value]);
}
return received;
