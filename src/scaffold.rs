//! Scaffolding: `lesson new` and `lesson init`.
