"""The mutating plans of a channel: `relforge publish` (a manifest's validated artifacts into
nightly or test), `relforge promote` (the exact objects of one version, test → release) and
`relforge yank` (PEP 592), each printed before it runs and applied only with `--execute`:
transfers create-if-absent, then the index pages, journaled so a killed run resumes."""
