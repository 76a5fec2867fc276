"""The README's results table is what the benchmarks' JSON files say, and says which are missing."""

from tests.conftest import REPO_ROOT, load_benchmark


def _readme_table():
    return load_benchmark("readme_table")


def test_the_readme_results_table_is_filled_from_the_benchmark_files():
    module = _readme_table()
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index(module.START) + len(module.START) : readme.index(module.END)].strip()
    assert block == module.table(), (
        "README.md's results table is stale: run `python benchmarks/readme_table.py`"
    )


def test_a_benchmark_without_results_gets_a_row_naming_its_command(tmp_path, monkeypatch):
    module = _readme_table()
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    rows = module.table().splitlines()[2:]
    assert len(rows) == len(module.SECTIONS)
    assert all("not measured yet" in row for row in rows)
    assert "`python benchmarks/lab2_vs_classic.py`" in module.table()
