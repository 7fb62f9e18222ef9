//! One execution end to end: executor, bridge (validation, conversion, budgets) and limits.
