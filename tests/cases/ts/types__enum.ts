// Enums (numeric with reverse mapping, string, const, computed) and namespaces, merged with each other too, become plain objects.
// expect: {"blue":6,"name":"Green","up":"UP","keys":["Up","Down"],"flags":3,"area":18,"label":"Kind.Second"}
enum Color { Red, Green = 5, Blue }
enum Direction { Up = "UP", Down = "DOWN" }
const enum Flag { None = 0, A = 1 << 0, B = 1 << 1, AB = A | B }
namespace Geometry {
  export const unit = 2;
  export function area(side: number): number { return side * side * unit; }
}
enum Kind { First, Second }
namespace Kind {
  export function label(kind: Kind): string { return "Kind." + Kind[kind]; }
}
({
  blue: Color.Blue,
  name: Color[5],
  up: Direction.Up,
  keys: Object.keys(Direction),
  flags: Flag.AB,
  area: Geometry.area(3),
  label: Kind.label(Kind.Second),
})
