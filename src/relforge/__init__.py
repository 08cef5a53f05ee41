"""relforge: release engineering and binary build matrices for projects that ship native wheels."""

__version__ = "0.1.0"
