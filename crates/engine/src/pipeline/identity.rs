//! A node's identity: its fields (`cfg=sim-x`, `family=f`, `v=128`, …) and the readable
//! string they make (`execute[cfg=sim-x, family=f, v=128, …]`).
//!
//! Fields are held in up to three shared parts, not one list per node: an episode's
//! identity is its configuration's part, its variant's and its unit's (arm, cap,
//! repeat), each made once and shared by every node that has it. A study of 72,576
//! episodes held 61 MB of field lists and strings when each episode had its own.
//!
//! Never: reads the manifest, the cache or anything but the fields it is given.

use std::sync::Arc;

use super::key::NodeKind;

/// One identity field: its name and value.
pub type Field = (&'static str, Arc<str>);

/// A shared list of fields. `Arc<Vec<_>>`, not `Arc<[_]>`: a thin pointer, so the
/// three parts of every node take 24 bytes rather than 48 (3.5 MB of the capacity
/// study at 4 repeats, two nodes an episode); reading a field goes through one more
/// pointer, which only identities and plans do.
pub type Part = Arc<Vec<Field>>;

/// A node's identity fields, in order: the fields of each part, part after part.
#[derive(Debug, Clone)]
pub struct Fields {
    parts: [Part; 3],
}

impl Fields {
    /// Fields in one part.
    pub fn of(fields: Vec<Field>) -> Fields {
        let empty: Part = Arc::new(Vec::new());
        Fields {
            parts: [Arc::new(fields), empty.clone(), empty],
        }
    }

    /// Fields in three shared parts, in this order.
    pub fn joined(first: &Part, second: &Part, third: &Part) -> Fields {
        Fields {
            parts: [first.clone(), second.clone(), third.clone()],
        }
    }

    /// The fields as the one list they make.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> + Clone + '_ {
        self.parts
            .iter()
            .flat_map(|part| part.iter().map(|(k, v)| (*k, v.as_ref())))
    }

    /// How many fields.
    pub fn len(&self) -> usize {
        self.parts.iter().map(|part| part.len()).sum()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of field `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// The fields in one part of their own (the part a variant's episodes share).
    pub fn to_part(&self) -> Part {
        Arc::new(
            self.parts
                .iter()
                .flat_map(|part| part.iter().cloned())
                .collect(),
        )
    }

    /// The fields as owned pairs.
    pub fn to_vec(&self) -> Vec<(&'static str, String)> {
        self.iter().map(|(k, v)| (k, v.to_string())).collect()
    }
}

/// `kind[field=value, ...]` (tables and analyses: `kind[value, ...]`). Written into
/// one buffer: the DAG makes tens of thousands.
pub fn identity(kind: NodeKind, fields: &Fields) -> String {
    let named = !matches!(kind, NodeKind::Table | NodeKind::Analysis);
    let len: usize = fields.iter().map(|(k, v)| k.len() + v.len() + 3).sum();
    let mut id = String::with_capacity(kind.name().len() + 2 + len);
    id.push_str(kind.name());
    id.push('[');
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            id.push_str(", ");
        }
        if named {
            id.push_str(k);
            id.push('=');
        }
        id.push_str(v);
    }
    id.push(']');
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(fields: &[(&'static str, &str)]) -> Part {
        Arc::new(fields.iter().map(|&(k, v)| (k, Arc::from(v))).collect())
    }

    /// Three parts read as the one list they make, and as the one-part list of the
    /// same fields.
    #[test]
    fn joined_parts_read_as_one_list() {
        let joined = Fields::joined(
            &part(&[("cfg", "sim-x")]),
            &part(&[("family", "f"), ("v", "128")]),
            &part(&[("arm", "routed"), ("rep", "0")]),
        );
        let one = Fields::of(joined.to_part().to_vec());
        assert_eq!(joined.len(), 5);
        assert_eq!(joined.get("v"), Some("128"));
        assert_eq!(joined.get("cap"), None);
        assert_eq!(
            joined.iter().collect::<Vec<_>>(),
            one.iter().collect::<Vec<_>>()
        );
        assert_eq!(
            identity(NodeKind::Execute, &joined),
            "execute[cfg=sim-x, family=f, v=128, arm=routed, rep=0]"
        );
        assert_eq!(
            identity(NodeKind::Execute, &joined),
            identity(NodeKind::Execute, &one)
        );
        assert_eq!(
            identity(
                NodeKind::Table,
                &Fields::of(vec![("table", "episodes".into())])
            ),
            "table[episodes]"
        );
    }
}
