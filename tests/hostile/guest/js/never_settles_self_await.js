// An async function that awaits its own promise: nothing can ever settle it.
// expect-error: NeverSettles
let self;
self = (async () => {
  await null;
  return await self;
})();
await self;
