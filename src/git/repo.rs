//! The repository around a bank: discovery, the bank's folder in it, status and commits of bank files, fetch and push through the system `git`.
