//! What searches must not reveal under a policy: the files its `Read` deny rules cover.

use super::path_glob::CallPath;
use super::{Policy, Rule};
use troupe_tools::Concealed;

impl Policy {
    /// The paths glob and grep leave out: those a path-specific `Read` deny rule covers, matched
    /// as a `read_file` of the same path would be (relative to the workspace root, or absolute
    /// in an added directory). Empty when there are no such rules.
    pub fn concealed(&self) -> Concealed {
        let rules: Vec<Rule> = self
            .rules
            .deny
            .iter()
            .filter(|rule| rule.applies_to("Read") && !rule.is_tool_wide())
            .cloned()
            .collect();
        if rules.is_empty() {
            return Concealed::default();
        }
        let bases: Vec<Rule> = rules.clone();
        Concealed::new(move |path, root| {
            let call = CallPath::resolve(&path.to_string_lossy(), root);
            rules.iter().any(|rule| rule.matches_path(&call))
        })
        .with_bases(move |root| {
            bases
                .iter()
                .filter_map(|rule| rule.path_base(root))
                .collect()
        })
    }
}
