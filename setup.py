"""beamcrawl: a web crawler whose every round is a portable Apache Beam batch pipeline."""
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent


def _requirements(name):
    lines = (HERE / name).read_text().splitlines()
    return [l.strip() for l in lines if l.strip() and not l.startswith(("#", "-r"))]


setup(
    name="beamcrawl",
    version="0.1.0",
    description="A web crawler built as Apache Beam batch pipelines, with crawl state in Parquet.",
    long_description=(HERE / "README.md").read_text() if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["pipelines*", "transforms*", "strategies*", "schemas*"]),
    install_requires=_requirements("requirements.txt"),
    extras_require={"dev": _requirements("requirements-dev.txt")},
    entry_points={"console_scripts": ["beamcrawl=pipelines.cli:main"]},
)
