"""Promotion: object stores, channel layout, package indexes, publish/promote plans, PyPI.

Release artifacts are promoted, never rebuilt: the bytes that were validated are the bytes
users install.  Every write is create-if-absent and carries its sha256; nothing is overwritten
except index pages, which are replaced atomically.

Entry points: `plan_publish` (relforge.promote.publish) and `plan_promote`
(relforge.promote.promote) plan the uploads and copies, `execute` (relforge.promote.plan)
carries a plan out; `plan_folder`/`apply_folder` (relforge.promote.index) rebuild index pages;
`plan_yank`/`apply_yank` (relforge.promote.yank) mark files yanked; `check_channel`
(relforge.promote.integrity) verifies a channel; `plan_stage`/`apply_stage`, `plan_upload` and
`upload` (relforge.promote.pypi) stage and upload to PyPI.  Stores implement the protocol of
relforge.promote.store and are opened by URL with `open_store` (relforge.promote.registry).
"""
