// An instance whose data is private (JSON would send {}): refused, naming where it is and what to send.
// expect-error: Unserializable
// expect-message: result.report is an instance of Report with no own enumerable properties, which JSON would send as {}: build a plain object
class Report {
  #cities: string[] = [];
  add(city: string) { this.#cities.push(city); }
  get cities() { return this.#cities; }
}
const report = new Report();
report.add("Oslo");
return { report };
