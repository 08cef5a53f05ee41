"""`relforge verify` and `--repair`: a channel's stores against its stored manifests and its
pages (missing, extra, drifted, sidecar, page, parity and unfinished findings), and the repair
that restores each finding from a verified source only."""
