# memwiki developer entry points. Everything runs inside .venv, created on demand.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DIR ?= $(shell mktemp -d 2>/dev/null || echo /tmp/memwiki-demo)/demo-wiki
LOCOMO ?= ../shared/eval/locomo
# The package's bytecode, as `pip install` writes it for a user: an editable install does
# not, and with PYTHONDONTWRITEBYTECODE set every cold `memwiki` recompiles its modules
# (about 50 ms a process), which the latency benchmarks would count.
BYTECODE = $(BIN)/python -m compileall -q memwiki

.PHONY: demo test bench lint typecheck docs docs-check format clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	$(BYTECODE)
	touch $(STAMP)

demo: $(STAMP)
	@bash examples/demo.sh "$(DEMO_DIR)"

test: $(STAMP)
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BYTECODE)
	$(BIN)/python tests/bench/run.py --locomo "$(LOCOMO)"

lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	$(MAKE) --no-print-directory typecheck docs-check
	$(BIN)/pytest -q -p no:cacheprovider tests/test_architecture.py tests/test_docs.py

# mypy over the package (configuration in pyproject.toml, [tool.mypy]).
typecheck: $(STAMP)
	$(BIN)/mypy memwiki

# Regenerate the example outputs in docs/reference.md from real runs on a fresh demo wiki.
docs: $(STAMP)
	$(BIN)/python scripts/gen_reference.py

# Fail when docs/reference.md's examples drift from what the commands print.
docs-check: $(STAMP)
	$(BIN)/python scripts/gen_reference.py --check

format: $(STAMP)
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache

# End-to-end suite with the real agent clients (templates/hosts/client-versions.toml), installed into
# ~/.cache/memwiki-e2e; LATEST=1 installs the newest versions instead. HOSTS=a,b limits it.
.PHONY: e2e
e2e: $(STAMP)
	@start=$$(date +%s); \
	MEMWIKI_E2E=1 LATEST=$(LATEST) MEMWIKI_E2E_HOSTS=$(HOSTS) $(BIN)/pytest -p no:cacheprovider -q -rA \
	  --basetemp=$${TMPDIR:-/tmp}/memwiki-e2e-run tests/e2e; \
	rc=$$?; cat $${MEMWIKI_E2E_REPORT:-/tmp/memwiki-e2e-report.txt}; \
	echo "make e2e: $$(( $$(date +%s) - start )) s"; exit $$rc
