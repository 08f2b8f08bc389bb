//! This cluster's view of its applications: which hosts a Gslb serves, which Services back them, how
//! healthy they are and which addresses expose them. `resolve` holds the pure rules (k8gb's, minus its
//! quirks); the Kubernetes and file sources feed them.

pub mod resolve;
