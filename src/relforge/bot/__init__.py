"""The cherry-pick bot: PR-comment commands that put merged fixes onto release branches.

grammar (parse and validate a command) → flow (plan the picks, apply them: push, open PRs, record
them on the release tracker) → handler (GitHub events, permissions, replies) → webhook (HTTP).

Entry points: `dispatch` (relforge.bot.dispatch) answers one webhook delivery (comments in
relforge.bot.handler, pull requests in relforge.bot.pulls); `plan_picks` (given git, GitHub,
the settings and a `PickRequest`) / `apply_plan` (relforge.bot.flow) are the picks themselves,
for `relforge cherry-pick`;
`read_actions_event` reads the event a workflow job is given into an `ActionsEvent`.
"""

from __future__ import annotations

from relforge.bot.dispatch import dispatch
from relforge.bot.events import ActionsEvent, CommentEvent, PullEvent, read_actions_event
from relforge.bot.flow import (
    Action,
    FlowSettings,
    PickPlan,
    PickRequest,
    apply_plan,
    picked_with,
    plan_picks,
)
from relforge.bot.grammar import (
    CATEGORY_NAMES,
    DEFAULT_BOT,
    Category,
    make_command,
    parse_release_branch,
)
from relforge.bot.handler import DEFAULT_LABEL_PREFIX, BotSettings, post_once
from relforge.bot.replies import result_reply, target_lines
from relforge.bot.webhook import WebhookServer

__all__ = [
    "CATEGORY_NAMES",
    "DEFAULT_BOT",
    "DEFAULT_LABEL_PREFIX",
    "Action",
    "ActionsEvent",
    "BotSettings",
    "Category",
    "CommentEvent",
    "FlowSettings",
    "PickPlan",
    "PickRequest",
    "PullEvent",
    "WebhookServer",
    "apply_plan",
    "dispatch",
    "make_command",
    "parse_release_branch",
    "picked_with",
    "plan_picks",
    "post_once",
    "read_actions_event",
    "result_reply",
    "target_lines",
]
