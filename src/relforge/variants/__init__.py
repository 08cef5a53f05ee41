"""Experimental: PEP 825 variant wheels ("Wheel Variants: Package Format", a draft).

`relforge variant publish` stages a release's validated wheels as variant wheels
(`{name}-{version}-{python}-{abi}-{platform}-{label}.whl` with `*.dist-info/variant.json`,
members copied without recompression) into one index folder per channel whose project pages
also link `{name}-{version}-variants.json`.  The format version is pinned in
`relforge.matrix.variants.SCHEMA_URL`.

Entry points: `plan_variants` (relforge.variants.variantupload), given the store, a staging
folder from `staging_dir` and a `VariantRequest`, stages the wheels (each by
`stage_variant_wheel`, relforge.variants.variantstage, with the label and properties
`relforge.matrix.variants.variant_for` gives its cell) into a plan that `apply_variants`
writes; `check_variant_folder` (relforge.variants.labelcheck) checks a folder of variant
wheels.
"""

from __future__ import annotations

from relforge.variants.labelcheck import check_variant_folder
from relforge.variants.variantupload import (
    VariantRequest,
    apply_variants,
    plan_variants,
    staging_dir,
)

__all__ = [
    "VariantRequest",
    "apply_variants",
    "check_variant_folder",
    "plan_variants",
    "staging_dir",
]
