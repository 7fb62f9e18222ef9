// A Set as the result: sent as an array, not {}.
// expect: ["Oslo","Lima"]
const cities = new Set<string>(["Oslo", "Lima", "Oslo"]);
return cities;
