// TypeScript enums (regular and const) are plain objects at run time; reverse mapping works.
// expect: {"name":"Middle","flag":2}
enum Phase { Start, Middle, End }
const enum Flag { On = 2 }
({ name: Phase[Phase.Middle], flag: Flag.On })
