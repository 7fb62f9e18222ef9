# An argument the tool's schema does not declare, and close to none it does, is sent as given
# with a warning naming it and what the tool takes; a required argument left out whose schema
# has a default (`mode`) gets it, as the server would.
# expect: {"key":"k","value":"v","owner":"me","mode":"plain"}
# expect-message: Warning: "owner" is not an argument of fixture.keep (its schema does not declare it): sent as given, and the server may ignore it. fixture.keep takes "key", "value", "expire_seconds", "mode".
await tools.fixture.keep(key="k", value="v", owner="me")
