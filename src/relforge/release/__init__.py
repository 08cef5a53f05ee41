"""Release branches, tags and audits on real git repositories."""
