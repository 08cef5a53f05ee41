"""Release branches, tags and audits on real git repositories.

Entry points: `plan_cut` (relforge.release.cut), `plan_tag` (relforge.release.tag) and
`plan_patch` (relforge.release.patch) plan ref updates against the remote, `apply_plan`
(relforge.release.apply) pushes them; `release_status` (relforge.release.status) and
`audit_release` (relforge.release.audit) report on a release line; git itself is run through
`Git` (relforge.release.git).
"""
