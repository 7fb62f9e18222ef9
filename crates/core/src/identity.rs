//! Who an execution runs for, when the client said who it is (a bearer token of an identity
//! over HTTP): its name, for the audit log, and its rules, set within the gateway's. A call is
//! decided by those rules instead of the gateway's alone: an identity can keep tools out, make
//! them ask or pre-approve them, never let in a tool the gateway's rules keep out.

use std::sync::Arc;

use crate::Policy;

/// An identity of clients, and the rules its executions run under.
#[derive(Debug, Clone)]
pub struct Identity {
    name: String,
    policy: Policy,
}

impl Identity {
    /// `name`, whose executions run under `rules` set within `gateway_policy`.
    pub fn new(name: impl Into<String>, rules: Policy, gateway_policy: Arc<Policy>) -> Self {
        Self {
            name: name.into(),
            policy: rules.within(gateway_policy),
        }
    }

    /// Its name, as the settings file gives it and the audit log writes it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The rules its calls are decided by: its own within the gateway's.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }
}
