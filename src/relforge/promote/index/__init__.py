"""Package indexes of a channel: PEP 503 HTML and PEP 691 JSON pages (with PEP 658 and PEP 592
data) of each folder and of the channel root, built from what the stored manifests vouch for and
committed one folder at a time; nightly pruning; whether the download URL serves them."""
