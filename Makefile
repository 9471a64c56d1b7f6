# Two commands do all the set-up on a fresh machine (see README):
#   make run    -> creates .venv (Python 3.12), installs .[all,test], runs the main job on the
#                  bundled default study (paper_like) into outputs/<date>/<time>/
#   make test   -> same environment, then the whole test suite
# Extra arguments: make run ARGS="experiment=smoke"   make test PYTEST_ARGS="-k reliability"

VENV ?= .venv
# the first interpreter >= 3.12 found (pyenv installs are looked up too)
PY ?= $(shell for p in python3.12 $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) \
        $(wildcard /usr/local/bin/python3.1[2-9]) python3.13 python3; do \
        $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 && echo $$p && break; done)
ARGS ?=
# two pytest-xdist workers, a test file per worker (module fixtures stay shared): the suite
# takes ~20 min on 2 cores instead of ~31 (docs/benchmarks.md)
XDIST ?= -n 2 --dist loadfile
PYTEST_ARGS ?=
STAMP := $(VENV)/.installed

.PHONY: run test install browser lint clean

run: $(STAMP)
	$(VENV)/bin/delusion-bayes $(ARGS)

test: $(STAMP) browser
	$(VENV)/bin/python -m pytest $(XDIST) $(PYTEST_ARGS)

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(PY)" || { echo "error: no Python >= 3.12 found; install python3.12 or pass PY=/path/to/python3.12" >&2; exit 1; }
	$(PY) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[all,test]"
	touch $(STAMP)

# headless Chromium for the supplement's browser test (Debian package; skipped where unavailable)
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || echo "note: chromium could not be installed; the browser test will skip"; \
	  else echo "note: no chromium and no root apt-get; the browser test will skip"; fi; }

lint: $(STAMP)
	$(VENV)/bin/ruff check delusion_bayes tests experiments
	$(VENV)/bin/ruff format --check delusion_bayes tests experiments

clean:
	rm -rf $(VENV) .pytest_cache
