"""Builds: the cells of one release built in Docker or on the host, each into a wheel or archive.

Entry points: `plan_build` (relforge.builders.plan) selects the cells and stamps their versions;
`assign_builders` (relforge.builders.registry) picks Docker or the host per cell; `run_build`
and `write_manifest` (relforge.builders.executor) build them in parallel and record the
artifacts; `make_builder_image` (relforge.builders.images) and `make_python_image`
(relforge.builders.pyimage) make local builder images.  The submodules are imported where they
are used (no re-exports here: the Docker SDK and its kin load only when a build runs).
"""
