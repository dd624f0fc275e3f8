//! Where a team lives on the server. Team and agent names are already restricted to lowercase
//! letters, digits, `-` and `_`, so they are safe in subjects, stream, bucket and key names.

/// The names of one team's streams, buckets and subjects.
#[derive(Debug, Clone)]
pub struct Names {
    team: String,
}

impl Names {
    /// The names of `team`.
    pub fn new(team: &str) -> Names {
        Names {
            team: team.to_string(),
        }
    }

    /// The stream holding every mailbox of the team (work-queue retention: a message stays
    /// until its recipient acks it).
    pub fn mail_stream(&self) -> String {
        format!("troupe-{}-mail", self.team)
    }

    /// The subject of `agent`'s mailbox.
    pub fn mail_subject(&self, agent: &str) -> String {
        format!("troupe.{}.mail.{agent}", self.team)
    }

    /// Every mailbox subject of the team.
    pub fn mail_subjects(&self) -> String {
        format!("troupe.{}.mail.*", self.team)
    }

    /// The durable consumer of `agent`'s mailbox.
    pub fn mail_consumer(&self, agent: &str) -> String {
        format!("mail-{agent}")
    }

    /// Core subject that wakes `agent` without mail.
    pub fn wake_subject(&self, agent: &str) -> String {
        format!("troupe.{}.wake.{agent}", self.team)
    }

    /// The event log's stream.
    pub fn events_stream(&self) -> String {
        format!("troupe-{}-events", self.team)
    }

    /// The event log's subject.
    pub fn events_subject(&self) -> String {
        format!("troupe.{}.events", self.team)
    }

    /// The stream of the team's transcripts (limits retention: kept until the team is removed).
    pub fn transcripts_stream(&self) -> String {
        format!("troupe-{}-transcripts", self.team)
    }

    /// The subject of `agent`'s transcript.
    pub fn transcript_subject(&self, agent: &str) -> String {
        format!("troupe.{}.transcript.{agent}", self.team)
    }

    /// Every transcript subject of the team.
    pub fn transcript_subjects(&self) -> String {
        format!("troupe.{}.transcript.*", self.team)
    }

    /// A key-value bucket of the team (`roster`, `requests`, `tasks`, `presence`, `live`).
    pub fn bucket(&self, what: &str) -> String {
        format!("troupe-{}-{what}", self.team)
    }
}
