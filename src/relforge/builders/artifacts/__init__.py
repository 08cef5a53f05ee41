"""What a build produces, made right: the wheel repaired per the cell's platform policy and
checked against its cell (postbuild), the cell's version stamped in (stamping), small edits of a
built wheel (wheelfile), and the repair tools a builder container borrows (repairtools).

The other rooms of relforge.builders import this one by this front door only.
"""

from relforge.builders.artifacts.postbuild import (
    ArtifactProblem,
    RepairPolicy,
    check_archive_name,
    check_search_paths,
    check_wheel,
    declare_requirements,
    pick_artifact,
    repair_policy,
)
from relforge.builders.artifacts.repairtools import container_tools_dir, patchelf_path
from relforge.builders.artifacts.stamping import SOURCE_FOLDER, restamp, source_folder, version_env

__all__ = [
    "SOURCE_FOLDER",
    "ArtifactProblem",
    "RepairPolicy",
    "check_archive_name",
    "check_search_paths",
    "check_wheel",
    "container_tools_dir",
    "declare_requirements",
    "patchelf_path",
    "pick_artifact",
    "repair_policy",
    "restamp",
    "source_folder",
    "version_env",
]
