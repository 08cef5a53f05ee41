"""The cherry-pick bot: PR-comment commands that put merged fixes onto release branches.

grammar (parse and validate a command) → flow (plan the picks, apply them: push, open PRs, record
them on the release tracker) → handler (GitHub events, permissions, replies) → webhook (HTTP).
"""
