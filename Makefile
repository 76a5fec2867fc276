# Attention Lab. Two commands on a fresh machine with Python 3.10+ and make:
#   make demo   create .venv, install requirements-dev.txt, run the end-to-end demo (under 15 min on a CPU)
#   make test   create .venv, install requirements-dev.txt, run the test suite
# requirements.txt is what the kit needs to run (and what Colab installs); requirements-dev.txt adds
# the test runner and the notebook executor.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint browser datasets clean help
.DEFAULT_GOAL := help

help:
	@echo "make demo      data, three models, bundles, grading, runs/demo/report.html (creates .venv on first run)"
	@echo "make test      check the code's format (make lint), then run the test suite (creates .venv on first run)"
	@echo "make lint      ruff: the formatter's check and the linter (settings in pyproject.toml)"
	@echo "make datasets  rebuild the public splits under datasets/"
	@echo "make clean     remove .venv and runs/"

# (Re)install whenever a requirements file changes; a failed install leaves no stamp, so the
# next make retries it.
$(STAMP): requirements.txt requirements-dev.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Attention Lab needs Python 3.10 or newer; found " + sys.version.split()[0] + ". Run: make PYTHON=python3.12 ...")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { echo "Could not create $(VENV). On Debian/Ubuntu: sudo apt install python3-venv"; exit 1; }
	$(PY) -m pip install --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --disable-pip-version-check -r requirements-dev.txt
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) -m labs demo

# The suite on TEST_JOBS processes at once (each test file on one of them), then the tests marked serial
# alone: those that change what the others share (a secret in the kit), fill the container's memory, load
# the machine themselves or look at every process on it. Both parts run; either failing fails make test.
TEST_JOBS ?= 2
test: $(STAMP) lint browser
	status=0; \
	$(PY) -m pytest -m "not serial" -n $(TEST_JOBS) --dist loadfile || status=$$?; \
	$(PY) -m pytest -m serial || status=$$?; \
	exit $$status

# The code's habits, kept by CI: ruff's formatter and linter (settings in pyproject.toml).
lint: $(STAMP)
	$(PY) -m ruff format --check --diff .
	$(PY) -m ruff check .

# The class report's browser test opens the page in headless Chromium: as root on Debian/Ubuntu (CI)
# make installs it; elsewhere the test skips and says why (with CI set, it fails instead).
browser:
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing chromium for the class report's browser test"; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; \
	else echo "No chromium (and no root apt-get to install it): the class report's browser test will skip."; fi

datasets: $(STAMP)
	$(PY) -m labs data build

clean:
	rm -rf $(VENV) runs .pytest_cache
