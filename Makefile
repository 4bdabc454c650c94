# Two commands on a fresh Debian 12 machine: `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON_FILES := src tests benchmarks scripts
VENV := .venv/bin

.PHONY: help setup system python web run test lint format bench clean-local

help:
	@echo "make run    install what is missing, start the private stack, serve everything"
	@echo "make test   the same setup, then lint and the test suite"
	@echo "make lint   ruff (format check + lint) and mypy"
	@echo "make format ruff format and autofix"
	@echo "make bench  every benchmark beside its limits (FULL=1 for the full sizes)"

setup: system python web

system:
	@scripts/install-system.sh

python:
	@scripts/install-python.sh

# The page's chart library from the npm registry (web/package-lock.json), into the served folder.
web:
	@scripts/install-web.sh

run: setup
	@scripts/run.sh

test: setup
	@scripts/install-system.sh --for-tests
	@scripts/test.sh

lint: python
	$(VENV)/ruff format --check $(PYTHON_FILES)
	$(VENV)/ruff check $(PYTHON_FILES)
	$(VENV)/mypy

format: python
	$(VENV)/ruff format $(PYTHON_FILES)
	$(VENV)/ruff check --fix $(PYTHON_FILES)

# The broker benchmarks start RabbitMQ nodes of their own, as the tests do (--for-tests).
bench: setup
	@scripts/install-system.sh --for-tests
	@scripts/bench.sh $(if $(FULL),--full,)

# Stops the private stack and deletes its data (database, broker state, chosen ports).
clean-local:
	@scripts/local-stack.sh stop || true
	rm -rf .local/pg .local/mosquitto .local/ports.env .local/demo.env .local/demo.log
