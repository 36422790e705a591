# sriovop developer entry points. `make demo` and `make test` are the two commands of the README.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: all install deps venv control-plane node-components helm promtool images prereqs go-builds test e2e-cgroup2 unit integration lint fmt demo e2e e2e-node demo-pod vm bench failover manifests crds protos clean kind-deps kind-bin kind-tools kind-node-image kind-failover

all: test

$(VENV)/.installed: setup.cfg pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

venv install: $(VENV)/.installed

deps:
	bash hack/install-deps.sh

control-plane: deps
	bash hack/build-control-plane.sh

# kubelet, kube-controller-manager, kube-scheduler and crictl for `sriovop dev cluster up --nodes N`.
node-components: control-plane
	bash hack/build-node-components.sh

# The helm CLI for the chart tests (deploy/helm/), built from the Go module proxy into ~/.cache/sriovop/helm/.
helm: deps
	bash hack/build-helm.sh >/dev/null

# Prometheus' promtool for the monitoring rule tests (test/integration/manifests/test_monitoring_promtool.py),
# unpacked from Debian's prometheus package into ~/.cache/sriovop/promtool/ (seconds; a Go build takes an hour).
promtool: deps
	bash hack/get-promtool.sh >/dev/null

# ruff, mypy, the layering contracts of setup.cfg [importlinter] and the dead-code check (vulture; its
# false positives are listed in vulture_whitelist.py). About 1 min; lint-imports and vulture take ~2 s each.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check sriovop test hack
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/vulture sriovop test hack vulture_whitelist.py --min-confidence 60 --exclude "sriovop/api/v1/types,*_pb2.py,*_pb2_grpc.py"

fmt: $(VENV)/.installed
	$(VENV)/bin/ruff check --fix sriovop test hack
	$(VENV)/bin/ruff format sriovop test hack

# The operator, webhook, config-daemon and pause images as OCI archives in build/images/, from Debian
# packages and wheels without a registry (layers cached; durations in docs/development.md).
# `sriovop dev images load --dir DIR` imports them into a local cluster's nodes.
images: $(VENV)/.installed deps
	$(VENV)/bin/sriovop dev images build --out build/images

# Everything `make test` builds, with the cold builds overlapped: the Go builds run one after another (they
# share two cores and one build cache) while the images (mostly package downloads and unpacking) and the
# QEMU guest's kernel and initramfs are prepared beside them. Warm, every step returns at once.
prereqs: $(VENV)/.installed deps
	$(MAKE) --no-print-directory -j3 go-builds images vm

# MAKEFLAGS emptied: the four builds run one after another even under prereqs' -j3.
go-builds: deps
	MAKEFLAGS= $(MAKE) --no-print-directory control-plane node-components helm promtool >/dev/null

# The README's test command: lint, the whole suite against a real kube-apiserver (the in-cluster, hollow-node,
# plan and quick-benchmark packages beside the rest, hack/run-suite.sh), then the QEMU e2e suite and the
# QEMU guest as a cluster node.
test: $(VENV)/.installed prereqs lint
	bash hack/run-suite.sh $(PYTEST_ARGS)
	$(VENV)/bin/pytest -m e2e test/e2e $(PYTEST_ARGS)
	$(MAKE) --no-print-directory e2e-node

unit: $(VENV)/.installed
	$(VENV)/bin/pytest test/unit $(PYTEST_ARGS)

integration: $(VENV)/.installed control-plane node-components helm promtool
	$(VENV)/bin/pytest test/integration $(PYTEST_ARGS)

# The QEMU igb guest (hack/vm/): QEMU from bookworm-backports, a Debian kernel, the initramfs.
vm:
	bash hack/vm/setup.sh >/dev/null

# Boots QEMU guests with emulated Intel 82576 PFs (also the last step of `make test`; durations in docs/development.md).
# The explicit -m overrides pyproject's default `-m 'not e2e'`.
e2e: $(VENV)/.installed control-plane vm
	$(VENV)/bin/pytest -m e2e test/e2e $(PYTEST_ARGS)

# The QEMU guest as cluster node sriovop-vm-1 (test/e2e_node, the last part of `make test`): the operator's
# config-daemon pod configures real igbvf VFs; the last line is the scenario's JSON summary.
e2e-node: $(VENV)/.installed control-plane node-components vm images
	@rm -f build/e2e-node.json; rc=0; $(VENV)/bin/pytest -m e2e test/e2e_node $(PYTEST_ARGS) || rc=$$?; \
	cat build/e2e-node.json 2>/dev/null || echo '{"passed": false}'; exit $$rc

# A pod with a real igbvf VF on the QEMU guest node (`sriovop demo pod`, docs/pod-with-vf.md): a dev cluster
# with --vm-nodes 1 (or the one running in DEMO_POD_ARGS' --dir), the operator from `make images`, a policy,
# a SriovNetwork and a pod; prints the pod's net1 and each step's duration, then stops the cluster
# (DEMO_POD_ARGS=--keep leaves it and prints the `down` command). Boots QEMU: one guest per machine.
DEMO_POD_ARGS ?=
demo-pod: $(VENV)/.installed control-plane node-components vm images
	$(VENV)/bin/sriovop demo pod $(DEMO_POD_ARGS)

# `sriovop dev cluster up --nodes 1` and `down` on a cgroup v2 kernel, in the QEMU guest (this host is
# cgroup v1). Not part of `make test`: 10-15 min under TCG on a busy machine.
e2e-cgroup2: $(VENV)/.installed control-plane node-components vm
	$(VENV)/bin/pytest -s -m e2e test/e2e_cgroup2 $(PYTEST_ARGS)

# Regenerate manifests/crds/ and docs/api-reference.md from sriovop/api/v1, and images/Dockerfile from the
# image list (sriovop/devcluster/images/spec.py); unit tests fail when they are stale.
crds: $(VENV)/.installed
	$(VENV)/bin/sriovop gen crds --out manifests/crds
	$(VENV)/bin/sriovop gen api-docs --out docs/api-reference.md
	$(VENV)/bin/sriovop gen dockerfile --out images/Dockerfile

# Regenerate sriovop/kubelet/*_pb2*.py from sriovop/kubelet/proto/ (a unit test fails when they are stale).
protos: $(VENV)/.installed
	$(VENV)/bin/sriovop gen protos

# The local demo: control plane, webhook, two operator replicas, two simulated nodes (README's first command).
demo: $(VENV)/.installed control-plane
	$(VENV)/bin/sriovop demo $(DEMO_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache

# Every benchmark of test/bench/ into bench-results/<timestamp>/ (one JSON each, summary.json, report.md
# with plots); `make bench BENCH_ARGS=--quick` runs each at its smallest size (also part of `make test`).
BENCH_ARGS ?=
$(VENV)/.bench-installed: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $@

bench: $(VENV)/.bench-installed control-plane
	$(PY) test/bench/run_all.py $(BENCH_ARGS)

# Three leader-elected operator replicas, a busy workload and 30 injected faults on a private control
# plane; prints the JSON report (hack/README-failover.md). `make failover FAILOVER_ARGS=--quick` for a smoke run;
# `FAILOVER_ARGS=--cluster`: the operator installed on a 2-node dev cluster, 5 runs of each in-cluster fault.
FAILOVER_ARGS ?=
failover: $(VENV)/.installed control-plane node-components
	$(PY) hack/failover.py $(FAILOVER_ARGS)

# Failover on a kind cluster (docs/kind.md): not part of `make test`. The node image is built here from
# Debian packages and our own Kubernetes binaries, without a registry; KIND_NODE_IMAGE=kindest/node:<tag>
# uses the stock image instead where a registry is reachable (then nothing is built for the node).
KIND_VERSION ?= v0.33.0
KIND_NODE_IMAGE ?= sriovop/kind-node:v1.35.4
KIND_BIN := $(HOME)/.cache/sriovop/kind/bin/kind

$(KIND_BIN):
	mkdir -p $(dir $@)
	GOBIN=$(dir $@) CGO_ENABLED=0 go install sigs.k8s.io/kind@$(KIND_VERSION)

kind-bin: $(if $(shell command -v kind),,$(KIND_BIN))

# docker.io and mmdebstrap when missing, and a Docker engine: dockerd is started (--ip-forward=false) when
# none answers, and stopped again by hack/kind/failover.sh's cleanup; a running one is left alone.
kind-deps: deps
	KIND_NODE_IMAGE=$(KIND_NODE_IMAGE) bash hack/kind/install-deps.sh

# kubeadm, kube-proxy and kubectl into ~/.cache/sriovop/kind/<version> (from the Go build cache mostly).
kind-tools: node-components
	bash hack/kind/build-k8s-tools.sh >/dev/null

kind-node-image: kind-deps $(VENV)/.installed control-plane node-components kind-tools
	KIND_NODE_IMAGE=$(KIND_NODE_IMAGE) bash hack/kind/build-node-image.sh

# 1 control plane + 2 workers, our images loaded, manifests/ applied, five faults of the leader; one JSON
# line per fault, then the report. The cluster is deleted afterwards (also on Ctrl-C).
kind-failover: kind-deps $(VENV)/.installed images kind-bin $(if $(filter sriovop/%,$(KIND_NODE_IMAGE)),kind-node-image)
	KIND_NODE_IMAGE=$(KIND_NODE_IMAGE) bash hack/kind/failover.sh

# Regenerate everything derived under manifests/ (CRDs and the supported-nic-ids ConfigMap), then
# render the kustomization as a check (`kubectl apply -k manifests/crds && kubectl apply -k manifests/`).
manifests: crds
	$(VENV)/bin/sriovop gen supported-nics --out manifests/supported-nic-ids.yaml
	$(VENV)/bin/kubectl kustomize manifests/ > /dev/null
