"""Promotion: object stores, channel layout, package indexes, publish/promote plans, PyPI.

Release artifacts are promoted, never rebuilt: the bytes that were validated are the bytes
users install.  Every write is create-if-absent and carries its sha256; nothing is overwritten
except index pages, which are replaced atomically.
"""
