"""Code forges relforge talks to (GitHub's REST API today)."""

from __future__ import annotations

from relforge.forges.github import GitHubClient, repo_from_url

__all__ = ["GitHubClient", "repo_from_url"]
