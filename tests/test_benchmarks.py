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


def test_the_readme_experiments_table_is_filled_from_the_experiments_file():
    module = _readme_table()
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    start, end = module.EXPERIMENTS
    block = readme[readme.index(start) + len(start) : readme.index(end)].strip()
    assert block == module.experiments_table(), (
        "README.md's experiments table is stale: run `python benchmarks/readme_table.py`"
    )


def test_the_experiments_table_shows_each_seed_of_a_setting(tmp_path, monkeypatch):
    import json

    module = _readme_table()
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    assert "not measured yet" in module.experiments_table().lower()
    run = {
        "setting": "demo, gru",
        "what": "GRU",
        "training_seconds": 100.0,
        "seen": 0.99,
        "unseen": 0.9,
        "held_out_words": 0.92,
        "date": "2026-11-25 03:00",
        "device": "CPU",
    }
    runs = [{**run, "seed": 2, "unseen": 0.91}, {**run, "seed": 1}]
    (tmp_path / "name_transliteration_experiments.json").write_text(json.dumps({"runs": runs}))
    row = module.experiments_table().splitlines()[2]
    assert "| 1 / 2 |" in row and "90.00 % / 91.00 %" in row and "100 s / 100 s" in row


def test_every_experiment_run_is_a_setting_the_script_can_run_again():
    import json

    experiments = load_benchmark("name_transliteration_experiments")
    runs = json.loads((experiments.RESULTS).read_text(encoding="utf-8"))["runs"]
    assert runs
    for run in runs:
        what, fields, table = experiments.SETTINGS[run["setting"]]
        assert (run["what"], run["fields"], run["table"]) == (what, fields, table), run["setting"]
