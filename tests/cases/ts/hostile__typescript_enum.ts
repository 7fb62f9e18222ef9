// TypeScript enums (regular and const) are plain objects at run time; reverse mapping works.
// expect: {"name":"Middle","flag":2}
// pending: CRASH of the whole gateway: any `enum` panics oxc's transformer (Scoping built without SemanticBuilder::with_enum_eval(true)); unwinding out of Prepared::run then frees the QuickJS runtime before its context, and JS_FreeRuntime's assertion list_empty(&rt->gc_obj_list) aborts the process
enum Phase { Start, Middle, End }
const enum Flag { On = 2 }
({ name: Phase[Phase.Middle], flag: Flag.On })
