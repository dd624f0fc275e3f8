//! One conformance suite for every team-store backend: each behaviour the team runtime relies
//! on is a function taking a [`Backend`], run once on the file store and once on a real NATS
//! JetStream server (`troupe_testkit::nats`), both seen only as `dyn TeamStore`. Tests of one
//! backend's own format (file offsets, lock files) stay with that backend.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod backend;
mod changes;
mod children;
mod leases;
mod mailbox;
mod requests;
mod roster_events;
mod tasks;
mod transcripts;
