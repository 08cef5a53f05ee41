"""Code forges relforge talks to (GitHub's REST API today).

Entry points: `GitHubClient` (the REST API), `repo_from_url` (`owner/name` of a remote URL),
`project_repo` / `require_project_repo` (the repository a clone belongs to).
"""

from __future__ import annotations

from relforge.forges.github import GitHubClient, repo_from_url
from relforge.forges.repository import project_repo, require_project_repo

__all__ = ["GitHubClient", "project_repo", "repo_from_url", "require_project_repo"]
