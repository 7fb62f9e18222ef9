// An average of nothing is NaN, which JSON would send as null: refused, naming the field.
// expect-error: Unserializable
// expect-message: result.average is NaN: JSON has no NaN or Infinity
const temperatures = [];
return { average: temperatures.reduce((sum, t) => sum + t, 0) / temperatures.length };
