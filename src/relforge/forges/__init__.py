"""Code forges relforge talks to (GitHub's REST API today)."""
