// Intl, which toolweave's JavaScript does not have: the answer says so and what to use.
// expect-error: GuestError
// expect-message: ReferenceError: Intl is not defined (Intl is not available in toolweave's JavaScript (no locale or time zone data): format numbers with toFixed() or toLocaleString() (en-US)
const price: string = new Intl.NumberFormat("de-DE", { style: "currency", currency: "EUR" }).format(1234.5);
price;
