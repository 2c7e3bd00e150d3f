//! The banks a read-only command shows (`lesson list`, `show`, `review`, `dedup`): the bank in
//! front, then the banks it includes (`[banks] include`, [`crate::layers`]), each loaded as the
//! front one was, with supersession applied across them: a slug a lesson of one bank
//! supersedes is superseded in every other bank of the stack too.

use std::path::Path;

use crate::bank::{Bank, BankError};

/// A bank of the stack with its name (`.` for the bank in front).
#[derive(Debug)]
pub struct Stacked {
    /// [`crate::layers::Layer::name`], or [`crate::layers::FRONT`].
    pub name: String,
    /// The bank.
    pub bank: Bank,
}

/// The stack on the front bank `front` (already loaded): `[front]` alone, with nothing read,
/// when it includes no bank; else each included bank loaded with `load`.
pub fn load<E: From<BankError>>(
    front: Bank,
    load: impl Fn(&Path) -> Result<Bank, E>,
) -> Result<Vec<Stacked>, E> {
    let layers = crate::layers::resolve(&front.root, &front.config).map_err(BankError::from)?;
    let mut stack = vec![Stacked {
        name: crate::layers::FRONT.to_string(),
        bank: front,
    }];
    for layer in layers {
        stack.push(Stacked {
            bank: load(&layer.root)?,
            name: layer.name,
        });
    }
    if stack.len() > 1 {
        let declared: Vec<Vec<(String, String)>> =
            stack.iter().map(|s| s.bank.supersession()).collect();
        for (i, s) in stack.iter_mut().enumerate() {
            let others = declared
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .flat_map(|(_, pairs)| pairs.iter().cloned());
            s.bank.supersede_from(others);
        }
    }
    Ok(stack)
}

/// Whether the stack has banks besides the front one.
pub fn is_layered(stack: &[Stacked]) -> bool {
    stack.len() > 1
}
