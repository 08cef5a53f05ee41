"""Builder images and the Docker engine: the connection (engine), the pull policy (pull), a
Debian base image made with debootstrap (baseimage), and a multi-Python builder image laid out
as manylinux does (pyimage, pythons, imageroot) proved by one offline container (imagecheck).
The Docker SDK loads only inside the functions that need it.

The other rooms of relforge.builders import this one by this front door only.
"""

from relforge.builders.images.baseimage import (
    LABEL_CUDA,
    LABEL_PYTHONS,
    ImageSpec,
    make_builder_image,
)
from relforge.builders.images.engine import connect, engine_address, image_id, missing_image_hint
from relforge.builders.images.pull import PULL_POLICIES, PullPolicy, pull, repo_digest, wants_pull
from relforge.builders.images.pyimage import (
    BUILD_REQUIREMENTS,
    PythonImageSpec,
    base_spec,
    make_python_image,
)

__all__ = [
    "BUILD_REQUIREMENTS",
    "LABEL_CUDA",
    "LABEL_PYTHONS",
    "PULL_POLICIES",
    "ImageSpec",
    "PullPolicy",
    "PythonImageSpec",
    "base_spec",
    "connect",
    "engine_address",
    "image_id",
    "make_builder_image",
    "make_python_image",
    "missing_image_hint",
    "pull",
    "repo_digest",
    "wants_pull",
]
