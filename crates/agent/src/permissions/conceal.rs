//! What searches must not reveal under a policy: the files its `Read` deny rules cover, by the
//! path named or, for a symlink, the path it leads to.

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
            let raw = path.to_string_lossy();
            let call = CallPath::resolve(&raw, root);
            if rules.iter().any(|rule| rule.matches_path(&call)) {
                return true;
            }
            // The walk follows no symlink, so only the entry itself can lead elsewhere: a link
            // into a denied tree is hidden as the tree is.
            let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            is_link
                && CallPath::resolve_real(&raw, root)
                    .is_some_and(|real| rules.iter().any(|rule| rule.matches_path(&real)))
        })
        .with_bases(move |root| {
            bases
                .iter()
                .filter_map(|rule| rule.path_base(root))
                .collect()
        })
    }
}
