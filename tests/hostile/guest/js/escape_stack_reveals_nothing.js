// A stack trace taken inside a host callback names no host file paths or secrets.
// expect: {"hostPath":false,"secret":false}
const stack = await new Promise((resolve) => setTimeout(() => resolve(new Error("where am I").stack), 0));
return { hostPath: /\/(home|work|usr|root|tmp)\//.test(stack), secret: stack.includes("from-config") };
