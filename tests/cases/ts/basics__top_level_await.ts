// expect: [1,2]
const one = await Promise.resolve(1);
const two = await new Promise<number>((resolve) => setTimeout(() => resolve(2), 5));
[one, two]
