// Listing tools says what exists (and a misspelled name is not "in" it), while any name still reads as something callable.
// expect: {"servers":["alpha","beta","fixture"],"hasAdd":true,"hasAd":false,"hasFs":false,"count":21,"typeofAd":"function","frozen":true}
return {
  servers: Object.keys(tools),
  hasAdd: "add" in tools.fixture,
  hasAd: "ad" in tools.fixture,
  hasFs: "fs" in tools,
  count: Object.keys(tools.fixture).length,
  typeofAd: typeof tools.fixture.ad,
  frozen: Object.isFrozen(tools.fixture),
};
