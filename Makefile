# morlog: set up a virtual environment and run the demo or the tests.
#   make demo   - install morlog with the spark extra only, then run the main job (sample
#                 logs, then the upsert pipeline on local Spark)
#   make test   - set up (morlog with every extra and the test tools), then lint, type-check
#                 and run the whole test suite
# Both use the one environment .venv; each has its own stamp, so `make demo` installs only
# what the demo needs and a later `make test` adds the test tools.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.morlog-installed
DEMO_STAMP := $(VENV)/.morlog-demo-installed

.PHONY: setup demo test lint typecheck pytest clean check-floor

# PySpark finds format("morlog") by listing the top-level pyspark_* modules on sys.path
# (pkgutil.iter_modules in pyspark/sql/worker/lookup_data_sources.py). The editable install
# maps morlog's folders through an import hook, which that listing does not see; so a .pth
# file puts on sys.path a directory holding only a link to spark/pyspark_morlog. (Not
# setuptools' strict editable mode: its tree of per-file links misses every module added
# after `make setup`.) tests/test_packaging.py checks it.
DISCOVERY := build/spark-discovery
define spark_discovery
	mkdir -p $(DISCOVERY)
	ln -sfn ../../spark/pyspark_morlog $(DISCOVERY)/pyspark_morlog
	$(BIN)/python -c 'import pathlib, sys, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "morlog-spark-discovery.pth").write_text(sys.argv[1] + "\n")' "$(CURDIR)/$(DISCOVERY)"
endef

# --no-compile: pip would byte-compile every module it installs (about 15,000 files, 24 s of
# CPU); Python compiles the ones a run imports when it first imports them
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --no-compile -e ".[test]"
	$(spark_discovery)
	touch $(STAMP)

# pypaimon (bench scale's anchor) pins pyarrow<20: an environment of its own inside .venv,
# where bench scale finds it (bench/scale.py paimon_python) and runs its pypaimon steps.
# Its requirements (morlog's own and the paimon extra's, read from pyproject.toml) install
# while .venv's do (setup's sub-make runs the two at once: pip waits on files much of the
# time; alone, this environment took about 50 s on a loaded 2-core machine); morlog itself
# goes in after .venv's install, as two editable builds at once would both write
# morlog.egg-info in the checkout.
PAIMON_VENV  := $(VENV)/paimon
PAIMON_DEPS  := $(PAIMON_VENV)/.deps-installed
PAIMON_STAMP := $(PAIMON_VENV)/.morlog-installed
$(PAIMON_DEPS): pyproject.toml
	$(PYTHON) -m venv $(PAIMON_VENV)
	$(PAIMON_VENV)/bin/python -m pip install -q --upgrade pip
	$(PYTHON) -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print("\n".join(p["dependencies"] + p["optional-dependencies"]["paimon"]))' > $(PAIMON_VENV)/requirements.txt
	$(PAIMON_VENV)/bin/python -m pip install -q --no-compile -r $(PAIMON_VENV)/requirements.txt
	touch $(PAIMON_DEPS)
$(PAIMON_STAMP): $(PAIMON_DEPS) $(STAMP)
	$(PAIMON_VENV)/bin/python -m pip install -q --no-deps -e .
	touch $(PAIMON_STAMP)

# .venv is made before the two installs start: each `python -m venv` checks whether its
# directory exists and then creates it with its parents, so the paimon environment's venv could
# create .venv between the other's check and its mkdir ("File exists", seen in CI)
setup:
	mkdir -p $(VENV)
	$(MAKE) --no-print-directory -j2 $(PAIMON_STAMP)

$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[spark]"
	$(spark_discovery)
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/morlog demo
	$(BIN)/morlog spark-demo

lint: setup
	$(BIN)/ruff check api config logformat readers writers compat spark bench cli tests

# mypy cannot follow the package-dir mapping of the editable install, so it checks a tree of
# symbolic links laid out as installed (morlog/ = api/, morlog/<layer>/ = <layer>/).
TYPETREE := build/typecheck
typecheck: setup
	rm -rf $(TYPETREE) && mkdir -p $(TYPETREE)/morlog
	for f in api/*.py; do ln -s ../../../$$f $(TYPETREE)/morlog/; done
	for d in config logformat compat readers writers spark bench cli; do ln -s ../../../$$d $(TYPETREE)/morlog/$$d; done
	MYPYPATH=$(TYPETREE) $(BIN)/mypy -p morlog

pytest: setup
	$(BIN)/python -m pytest

test: lint typecheck pytest

# the core test modules against the oldest versions pyproject.toml allows (not part of
# `make test`: a second environment; run it when a floor or a pyarrow call changes)
FLOOR := build/floor-env
FLOOR_TESTS := tests/test_client.py tests/test_table_model.py tests/test_writer.py \
	tests/test_queries.py tests/test_cdc.py tests/test_cdc_json.py tests/test_compaction.py \
	tests/test_logcompaction.py tests/test_distributed_write.py tests/test_schema_evolution.py \
	tests/test_record_index.py tests/test_codec_properties.py tests/test_avro_columnar.py \
	tests/test_read_paths.py
check-floor:
	rm -rf $(FLOOR) && $(PYTHON) -m venv $(FLOOR)
	$(FLOOR)/bin/pip install -q "pyarrow==19.0.1" "numpy==1.26.4" "fastavro==1.9.0" \
		"tqdm==4.66.1" hudi xxhash pytest hypothesis
	$(FLOOR)/bin/pip install -q --no-deps .
	cd $(FLOOR) && ln -sfn ../../tests tests && ln -sfn ../../spec spec && \
		bin/python -m pytest -q -p no:cacheprovider -o addopts="" $(FLOOR_TESTS)

clean:
	rm -rf $(VENV) out build dist bench-results *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
