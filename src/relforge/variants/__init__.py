"""Experimental: PEP 825 variant wheels ("Wheel Variants: Package Format", a draft).

`relforge variant publish` stages a release's validated wheels as variant wheels
(`{name}-{version}-{python}-{abi}-{platform}-{label}.whl` with `*.dist-info/variant.json`,
members copied without recompression) into one index folder per channel whose project pages
also link `{name}-{version}-variants.json`.  The format version is pinned in
`relforge.matrix.variants.SCHEMA_URL`.

Entry points: `variant_for` (the label and properties of a cell), `stage_variant_wheel`,
`publish_variants`, `check_variant_folder`.
"""

from __future__ import annotations

from relforge.variants.labelcheck import check_variant_folder
from relforge.variants.variantupload import apply_variants, plan_variants, staging_dir

__all__ = ["apply_variants", "check_variant_folder", "plan_variants", "staging_dir"]
