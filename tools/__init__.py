"""The kit's own tooling, beside the labs: what instructors and maintainers run, not what a lab teaches.

demo.py            ``make demo``: datasets, the reference models, bundles, grading, a report
release.py         ``python -m labs release homework``: the student kit, solutions replaced by TODOs
colab.py           ``python -m labs colab-links``: Open-in-Colab badges and the repository the notebooks clone
notebooks.py       notebooks built from their jupytext sources, with the kit's setup cell
public_datasets.py ``python -m labs data build``: the public splits under ``datasets/``
commands.py        these commands, in ``python -m labs``
"""
