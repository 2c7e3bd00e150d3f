//! `_index.md`: rendered from `templates/_index.md.j2`, deterministic byte for byte.
