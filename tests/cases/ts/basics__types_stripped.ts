// Interfaces, generics, type-only imports, `as`, and non-null assertions are stripped.
// expect: {"names":["ada","grace"],"count":2,"first":"ADA"}
import type { Something } from "./nowhere";
interface Person { name: string; age?: number }
type Names = Array<Person["name"]>;
function pluck<T, K extends keyof T>(items: T[], key: K): T[K][] {
  return items.map((item) => item[key]);
}
const people: Person[] = [{ name: "ada" }, { name: "grace", age: 85 }];
const names = pluck(people, "name") as Names;
const first = names[0]!.toUpperCase();
return { names, count: names.length satisfies number, first };
