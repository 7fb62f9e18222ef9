// `env` from the config reaches the upstream process.
// expect: "from-config"
await tools.fixture.env({ name: "FIXTURE_SECRET" })
