
```javascript
// A fence with another info string and blank lines around it; errors keep the lines as written.
// expect-error: GuestError
// expect-message: at line 7, column
const weather = await tools.fixture.structured({ city: "Oslo" });
throw new Error(`too cold in ${weather.city}`);
```

