"""`relforge bot …` (the cherry-pick bot: GitHub Actions event handler, webhook server, workflow)
and `relforge cherry-pick` (the same flow from a terminal)."""

from __future__ import annotations

import os
import string
from pathlib import Path
from typing import Any

import click

from relforge.actions import step_summary
from relforge.bot import (
    CATEGORY_NAMES,
    DEFAULT_BOT,
    DEFAULT_LABEL_PREFIX,
    Action,
    BotSettings,
    Category,
    FlowSettings,
    PickPlan,
    PickRequest,
    apply_plan,
    dispatch,
    make_command,
    parse_release_branch,
    picked_with,
    plan_picks,
    post_once,
    read_actions_event,
    result_reply,
    target_lines,
)
from relforge.cli.options import (
    clone_option,
    execute_option,
    github_repo_option,
    remote_option,
)
from relforge.errors import ConfigError, NothingToDoError, UsageError, ValidationFailed
from relforge.forges import GitHubClient, require_project_repo
from relforge.git import Git

_BOT_CHARS = frozenset(string.ascii_letters + string.digits + "-")


def _common(command: Any) -> Any:
    """Options shared by every command that runs the flow."""
    for option in reversed(
        [
            clone_option(),
            remote_option(),
            github_repo_option(
                "The GitHub repository (default: from the event, or the remote's URL)."
            ),
            click.option(
                "--draft-on-conflict",
                is_flag=True,
                help="On a conflict, push the pick with its conflict markers and open a draft PR "
                "(default: abort and report the files).",
            ),
            execute_option("Push and post (default: dry run)."),
        ]
    ):
        command = option(command)
    return command


def _flow_settings(remote: str, draft_on_conflict: bool, *, bot: bool = False) -> FlowSettings:
    # As a bot (in Actions or as a webhook) pushes authenticate with GITHUB_TOKEN, since the
    # checkout keeps no credentials; a person's own cherry-pick uses their git credentials.
    token = os.environ.get("GITHUB_TOKEN") if bot else None
    return FlowSettings(remote=remote, draft_on_conflict=draft_on_conflict, push_token=token)


def _check_bot_name(name: str) -> str:
    if not name or not set(name) <= _BOT_CHARS:
        raise UsageError(f"{name!r} is not a GitHub login", key="--bot-name")
    return name


@click.command("cherry-pick")
@click.argument("pr", type=click.IntRange(min=1), metavar="PR")
@click.option(
    "--onto",
    "onto",
    multiple=True,
    required=True,
    metavar="release/X.Y",
    help="Release branch to pick onto; repeat for several.",
)
@click.option(
    "-c",
    "--classification",
    "category",
    required=True,
    type=click.Choice(CATEGORY_NAMES),
    help="Why the fix belongs in the release.",
)
@click.option("--fixes", metavar="URL", help="The issue it fixes (needed for regression, …).")
@_common
def cherry_pick(
    pr: int,
    onto: tuple[str, ...],
    category: str,
    fixes: str | None,
    repo: Path,
    remote: str,
    github_repo: str | None,
    draft_on_conflict: bool,
    execute: bool,
) -> None:
    """Cherry-pick merged pull request PR onto release branches, open the PRs and record them
    on the release tracker.  Dry run unless --execute."""
    branches = []
    for value in onto:
        branch = parse_release_branch(value)
        if branch in branches:
            raise UsageError(f"--onto {branch} is given twice")
        branches.append(branch)
    command = make_command(onto=branches, category=category, fixes=fixes)
    # Arguments are valid: only now touch git and the network.
    git = Git(repo)
    gh = GitHubClient(require_project_repo(git, remote, github_repo))
    settings = _flow_settings(remote, draft_on_conflict)
    plan = plan_picks(git, gh, settings, PickRequest(pr=pr, command=command))
    click.echo(f"cherry-pick #{pr} {plan.source.title!r} ({plan.commit[:12]}), {command.summary()}")
    done = apply_plan(git, gh, settings, plan) if execute else None
    for line in target_lines(plan, done):
        click.echo(line)
    if done is not None and any(d.pull for d in done):
        key = f"cherry-pick #{pr} onto {', '.join(o.name for o in command.onto)}"
        post_once(gh, pr, result_reply(plan, done, key), key)
    if done is None:
        click.echo("dry run: nothing was pushed or posted; rerun with --execute")
    _exit_for(plan)


def _exit_for(plan: PickPlan) -> None:
    targets = plan.targets
    aborted = [t for t in targets if t.action is Action.CONFLICT and t.head is None]
    if aborted:
        commands = sorted({picked_with(plan, t).command() for t in aborted})
        raise ValidationFailed(
            "; ".join(f"{t.onto.name} conflicts in {', '.join(t.conflicts)}" for t in aborted),
            hint=f"pick by hand on a branch from each release branch ({'; '.join(commands)}) "
            "or rerun with --draft-on-conflict",
        )
    if all(t.action is Action.ALREADY for t in targets):
        raise NothingToDoError("the fix is already on every branch named by --onto")


@click.group()
def bot() -> None:
    """The cherry-pick bot: answer `@relforge-bot cherry-pick …` comments on pull requests."""


def _bot_settings(
    bot_name: str,
    remote: str,
    draft: bool,
    execute: bool,
    label_prefix: str = DEFAULT_LABEL_PREFIX,
    label_category: str = Category.RELEASE.value,
) -> BotSettings:
    _check_bot_name(bot_name)
    if not label_prefix or any(ch.isspace() or ch == "," for ch in label_prefix):
        raise UsageError(f"{label_prefix!r} is not a label prefix", key="--label-prefix")
    flow = _flow_settings(remote, draft, bot=True)
    return BotSettings(
        bot=bot_name,
        execute=execute,
        flow=flow,
        label_prefix=label_prefix,
        label_category=Category(label_category),
    )


def _labels(command: Any) -> Any:
    """Options of the label trigger."""
    command = click.option(
        "--label-category",
        default=Category.RELEASE.value,
        show_default=True,
        type=click.Choice([c.value for c in Category if not c.needs_fixes]),
        help="The tracker category of picks asked for by a label.",
    )(command)
    return click.option(
        "--label-prefix",
        default=DEFAULT_LABEL_PREFIX,
        show_default=True,
        help="Labels PREFIXrelease-X.Y on a merged PR ask for a pick onto release/X.Y.",
    )(command)


@bot.command("handle")
@click.argument("event_file", type=click.Path(dir_okay=False, path_type=Path), metavar="EVENT.json")
@click.option(
    "--event-name",
    envvar="GITHUB_EVENT_NAME",
    help="issue_comment, pull_request or pull_request_target (default: $GITHUB_EVENT_NAME, "
    "else told from the payload).",
)
@click.option("--bot-name", default=DEFAULT_BOT, show_default=True, help="The login to answer to.")
@_labels
@_common
def handle(
    event_file: Path,
    event_name: str | None,
    bot_name: str,
    label_prefix: str,
    label_category: str,
    repo: Path,
    remote: str,
    github_repo: str | None,
    draft_on_conflict: bool,
    execute: bool,
) -> None:
    """Answer one GitHub Actions event (the file in $GITHUB_EVENT_PATH): an `issue_comment`
    command, or a `pull_request` labelled or merged.  Dry run unless --execute: the reply is
    printed, nothing is pushed or posted."""
    settings = _bot_settings(
        bot_name, remote, draft_on_conflict, execute, label_prefix, label_category
    )
    given = read_actions_event(event_file, event_name, github_repo)
    event = given.event
    outcome = dispatch(
        given.name,
        given.payload,
        git=Git(repo),
        github_repo=given.repo,
        settings=settings,
        client=GitHubClient,
    )
    click.echo(f"{outcome.status.value}: {outcome.reason}")
    if outcome.reply is not None:
        where = "posted on" if outcome.posted else "reply for"
        if not execute:
            where = "dry run, would post on"
        click.echo(f"{where} #{event.number}:\n{outcome.reply}")
        step_summary(f"relforge-bot on #{event.number}", outcome.reply)


@bot.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--secret-env",
    default="RELFORGE_WEBHOOK_SECRET",
    show_default=True,
    help="Environment variable holding the webhook secret.",
)
@click.option("--bot-name", default=DEFAULT_BOT, show_default=True, help="The login to answer to.")
@_labels
@_common
def serve(
    host: str,
    port: int,
    secret_env: str,
    bot_name: str,
    label_prefix: str,
    label_category: str,
    repo: Path,
    remote: str,
    github_repo: str | None,
    draft_on_conflict: bool,
    execute: bool,
) -> None:
    """Receive GitHub webhooks (issue_comment, pull_request) and answer cherry-pick commands,
    cherry-pick labels and merged reverts.  Requests without a valid X-Hub-Signature-256 are
    answered 401.  Dry run unless --execute."""
    settings = _bot_settings(
        bot_name, remote, draft_on_conflict, execute, label_prefix, label_category
    )
    secret = os.environ.get(secret_env, "")
    if not secret:
        raise ConfigError(
            f"${secret_env} is empty: the server cannot check webhook signatures",
            key="--secret-env",
            hint="set it to the secret configured on the GitHub webhook",
        )
    git = Git(repo)
    served = require_project_repo(git, remote, github_repo)

    def on_event(name: str, payload: Any) -> None:
        outcome = dispatch(name, payload, git=git, github_repo=served, settings=settings)
        server.log(f"{name}: {outcome.status.value}: {outcome.reason}")
        if outcome.reply is not None and not outcome.posted:
            server.log(f"reply not posted (dry run or posted before):\n{outcome.reply}")

    from relforge.bot import WebhookServer  # http.server only when serving

    server = WebhookServer((host, port), secret=secret.encode(), handle=on_event)
    click.echo(f"listening on {server.url} for {served}; {settings.summary()}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
