"""The cherry-pick bot: PR-comment commands that put merged fixes onto release branches.

grammar (parse and validate a command) → flow (plan the picks, apply them: push, open PRs, record
them on the release tracker) → handler (GitHub events, permissions, replies) → webhook (HTTP).

Entry points: `dispatch` (relforge.bot.dispatch) answers one webhook delivery (comments in
relforge.bot.handler, pull requests in relforge.bot.pulls); `plan_picks`/`apply_plan`
(relforge.bot.flow) are the picks themselves, for `relforge cherry-pick`.
"""
