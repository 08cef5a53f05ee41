"""Promotion: object stores, channel layout, package indexes, publish/promote plans, PyPI.

Release artifacts are promoted, never rebuilt: the bytes that were validated are the bytes
users install.  Every write is create-if-absent and carries its sha256; nothing is overwritten
except index pages, which are replaced atomically.

Entry points: `plan_publish` (relforge.promote.publish), `plan_promote` (.promote) and
`execute` (.plan) publish and promote; `plan_yank`/`apply_yank` (.yank); `check_channel`
(.integrity) verifies a channel; `plan_stage` (.pypi) with `stage_wheels`, and
`plan_pypi_upload`/`apply_upload` (.pypi_flow) run the PyPI steps.
"""
