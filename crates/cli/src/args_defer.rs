//! A subcommand's flags added to its `clap::Command` only once that subcommand is the one being
//! parsed (clap's `Command::defer`): a run without a subcommand, `troupe -p …` among them,
//! builds none of the subcommands' flags, only their names and descriptions. `--help`, the
//! generated reference (which builds the whole tree) and every subcommand's parsing see the
//! same flags as before.

use clap::builder::Resettable;
use clap::{ArgMatches, Args, Command, FromArgMatches};

/// The flags `T` of one subcommand, built when that subcommand is parsed; reads as `T`.
#[derive(Debug)]
pub struct Deferred<T>(pub T);

impl<T: Args> Args for Deferred<T> {
    fn augment_args(cmd: Command) -> Command {
        cmd.defer(augmented::<T>)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        cmd.defer(augmented_for_update::<T>)
    }

    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

/// `T`'s flags added to `cmd` (see [`keeping_about`]).
fn augmented<T: Args>(cmd: Command) -> Command {
    keeping_about(cmd, T::augment_args)
}

/// [`augmented`] for `update_from_arg_matches`.
fn augmented_for_update<T: Args>(cmd: Command) -> Command {
    keeping_about(cmd, T::augment_args_for_update)
}

/// `augment(cmd)` with `cmd`'s descriptions left as they were: the subcommand's own (its
/// variant's doc comment, set once `augment_args` returned), which the doc comment of the
/// flags' type would otherwise replace, being added last now.
fn keeping_about(cmd: Command, augment: fn(Command) -> Command) -> Command {
    let (about, long) = (cmd.get_about().cloned(), cmd.get_long_about().cloned());
    augment(cmd)
        .about(Resettable::from(about))
        .long_about(Resettable::from(long))
}

impl<T: FromArgMatches> FromArgMatches for Deferred<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Deferred)
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Deferred)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

impl<T> std::ops::Deref for Deferred<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
