//! Guest-code engines behind a message API: JavaScript/TypeScript on QuickJS. No I/O of its own.
