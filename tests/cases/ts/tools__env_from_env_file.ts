// An `envFile` beside the config reaches the upstream process (and `env` wins over it: see
// tools__env_from_config.ts, whose variable the file names too).
// expect: "from-env-file"
await tools.fixture.env({ name: "FIXTURE_FROM_FILE" })
