"""The shipped public splits are exactly what `python -m labs data build` writes, and small."""

import filecmp

from labs import tasks
from tests.conftest import DATASETS
from tools.public_datasets import build, counts_markdown


def test_rebuilding_gives_the_shipped_bytes(tmp_path):
    written = build(tmp_path, log=lambda line: None)
    assert len(written) == 12
    for path in written:
        shipped = DATASETS / path.relative_to(tmp_path)
        assert filecmp.cmp(path, shipped, shallow=False), f"{shipped} differs from a fresh build"


def test_datasheet_counts_match_the_files():
    readme = (DATASETS / "README.md").read_text(encoding="utf-8")
    assert counts_markdown() in readme


def test_every_dataset_has_a_datasheet_section():
    readme = (DATASETS / "README.md").read_text(encoding="utf-8")
    for task in tasks.all_tasks():
        assert f"## {task.dataset.name}" in readme


def test_datasets_are_small_enough_for_git():
    total = sum(p.stat().st_size for p in DATASETS.rglob("*") if p.is_file())
    assert (
        total < 10 * 1024 * 1024
    )  # 9.2 MB since the name table holds 24,000 dictionary words (2.2 MB in all)
    assert not [p for p in DATASETS.rglob("*.py")]  # data and datasheets only
