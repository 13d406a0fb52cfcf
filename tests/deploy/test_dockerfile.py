"""The trainer image's Dockerfile: pinned base, multi-stage, pinned dependencies, non-root, `foxhunt` entrypoint."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import tomllib
from dockerfile_parse import DockerfileParser
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = REPO / "trainer_image" / "requirements.txt"
DIRECT = {"torch", "numpy", "scipy", "pyarrow", "boto3", "prometheus-client", "matplotlib"}
COMPILERS = re.compile(r"\b(build-essential|gcc|g\+\+|clang|python3-dev|cmake)\b")


@pytest.fixture(scope="module")
def dockerfile() -> DockerfileParser:
    return DockerfileParser(str(REPO / "Dockerfile"))


def stages(dockerfile: DockerfileParser) -> list[list[dict]]:
    result: list[list[dict]] = []
    for instruction in dockerfile.structure:
        if instruction["instruction"] == "FROM":
            result.append([])
        if result:
            result[-1].append(instruction)
    return result


def last(stage: list[dict], name: str) -> str:
    return [i["value"] for i in stage if i["instruction"] == name][-1]


def pinned_requirements() -> dict[str, str]:
    lines = [line.strip() for line in REQUIREMENTS.read_text().splitlines()]
    requirements = [Requirement(line) for line in lines if line and not line.startswith("#")]
    return {r.name.lower(): str(r.specifier) for r in requirements}


def test_base_image_is_a_cuda_runtime_pinned_by_tag_with_a_digest_slot(dockerfile):
    args = {i["value"].split("=", 1)[0]: i["value"].split("=", 1)[1] for i in dockerfile.structure
            if i["instruction"] == "ARG" and "=" in i["value"]}  # fmt: skip
    base = args["BASE_IMAGE"]

    assert re.fullmatch(r"nvidia/cuda:\d+\.\d+\.\d+-cudnn-runtime-ubuntu\d+\.\d+", base)
    assert "BASE_DIGEST" in args
    assert all(i["value"].startswith("${BASE_IMAGE}${BASE_DIGEST}") for i in dockerfile.structure
               if i["instruction"] == "FROM")  # fmt: skip


def test_build_is_multi_stage_with_no_compilers_in_the_final_stage(dockerfile):
    *build, final = stages(dockerfile)
    final_runs = " ".join(i["value"] for i in final if i["instruction"] == "RUN")

    assert build and any(COMPILERS.search(i["value"]) for i in build[0] if i["instruction"] == "RUN")
    assert not COMPILERS.search(final_runs)
    assert any(i["instruction"] == "COPY" and i["value"].startswith("--from=") for i in final)


def test_final_user_is_a_non_root_numeric_uid(dockerfile):
    user = last(stages(dockerfile)[-1], "USER")

    assert re.fullmatch(r"\d+(:\d+)?", user)
    assert int(user.split(":")[0]) != 0


def test_final_user_matches_the_pods_run_as_user(dockerfile):
    from foxhunt_workflows.templates import RenderOptions

    assert int(last(stages(dockerfile)[-1], "USER").split(":")[0]) == RenderOptions().run_as_user


def test_entrypoint_is_the_foxhunt_console_script_in_exec_form(dockerfile):
    assert json.loads(last(stages(dockerfile)[-1], "ENTRYPOINT")) == ["foxhunt"]


def test_foxhunt_console_script_exists_in_the_package():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    module, function = scripts["foxhunt"].split(":")
    path = REPO / "trainer_image" / Path(*module.split("."))
    source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")  # a package or a module

    assert scripts["foxhunt"] == "foxhunt.cli:main"
    tree = ast.parse(source.read_text())
    assert function in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_image_requirements_pin_every_dependency_exactly():
    pins = pinned_requirements()

    assert DIRECT <= set(pins)
    assert all(re.fullmatch(r"==[\w.+]+", spec) for spec in pins.values())


def test_image_pins_satisfy_the_package_dependency_ranges():
    pins = pinned_requirements()
    dependencies = [
        Requirement(d)
        for d in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    ]

    for dependency in dependencies:
        version = pins[dependency.name.lower()].removeprefix("==")
        assert dependency.specifier.contains(version, prereleases=True), (dependency, version)


def test_everything_the_dockerfile_copies_exists_and_is_in_the_build_context(dockerfile):
    patterns = [
        line
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    included = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    sources = [
        source
        for i in dockerfile.structure
        if i["instruction"] == "COPY" and not i["value"].startswith("--from=")
        for source in i["value"].split()[:-1]
    ]

    assert patterns[0] == "*", ".dockerignore should start from nothing and list what the build needs"
    assert sources
    for source in sources:
        assert (REPO / source).exists(), source
        assert source.rstrip("/") in included, source


def test_image_pins_satisfy_the_train_extra_it_installs():
    pins = pinned_requirements()
    train = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["train"]

    for dependency in map(Requirement, train):
        assert dependency.name.lower() in pins, dependency
        assert dependency.specifier.contains(
            pins[dependency.name.lower()].removeprefix("=="), prereleases=True
        )


def test_the_image_has_the_light_client_too():
    pins = pinned_requirements()

    assert {"hera", "pyyaml"} <= set(pins)


def test_the_runtime_image_carries_the_commit_it_was_built_from(dockerfile):
    runtime = stages(dockerfile)[-1]
    args = [i["value"] for i in runtime if i["instruction"] == "ARG"]
    env = " ".join(i["value"] for i in runtime if i["instruction"] == "ENV")
    assert 'FOXHUNT_COMMIT=""' in args  # a build argument, empty unless the build names the commit
    assert "FOXHUNT_COMMIT=${FOXHUNT_COMMIT}" in env  # what the MLflow record reads at run time
